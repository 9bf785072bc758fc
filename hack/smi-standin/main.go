// Command smi-standin stands in for the vendors' management tools (rocm-smi, npu-smi, cnmon, ...) on the local
// cluster's real nodes, whose hardware is simulated: installed under each tool's name, it answers the command
// lines the agent's backends run from smi-standin.json beside it, which test/framework/smifixture renders from
// the node's inventory entry, so the agent's real backends parse what a real tool would print. It is static
// (no libraries), since the agent runs it chrooted in the node's root; an unknown command line fails as a tool
// refusing its arguments would.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FixtureFile is the answers' file, beside the tool.
const FixtureFile = "smi-standin.json"

// answer is what one command line prints, and the report files it leaves in its working directory.
type answer struct {
	Stdout string            `json:"stdout"`
	Files  map[string]string `json:"files,omitempty"`
}

func main() {
	self, err := os.Executable()
	if err == nil {
		err = run(filepath.Dir(self), os.Args, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// run answers the command line args from the fixture in dir, writing what it prints to stdout and its report
// files into the working directory.
func run(dir string, args []string, stdout io.Writer) error {
	data, err := os.ReadFile(filepath.Join(dir, FixtureFile))
	if err != nil {
		return fmt.Errorf("no device answers this tool: %w", err)
	}
	var answers map[string]answer
	if err := json.Unmarshal(data, &answers); err != nil {
		return fmt.Errorf("cannot read %s: %w", FixtureFile, err)
	}
	line := strings.TrimSpace(filepath.Base(args[0]) + " " + strings.Join(args[1:], " "))
	a, ok := answers[line]
	if !ok {
		return fmt.Errorf("%s: invalid command", line)
	}
	for name, content := range a.Files {
		if err := os.WriteFile(filepath.Base(name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("cannot write %s: %w", name, err)
		}
	}
	_, err = io.WriteString(stdout, a.Stdout)
	return err
}
