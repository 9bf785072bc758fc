// Command doccheck fails when the repository's text cites what the repository does not hold: a Markdown link
// to a file that is not there, a "Step N" that docs/walkthrough.md does not define, or a document that lives
// outside the repository (the seed's specification, a design note). make verify runs it over the tracked files.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
)

// walkthrough is the page whose "## Step N" headings the code's "Step N" comments cite.
const walkthrough = "docs/walkthrough.md"

// outside are documents that are not in the repository, written so this file does not cite them itself.
var outside = []string{"DESIGN" + ".md", "reference-" + "behaviour", "seed-" + "walkthrough", "seed-" + "overview",
	"../" + "shared/"}

var (
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	stepCited   = regexp.MustCompile(`\bStep (\d+)\b`)
	stepHeading = regexp.MustCompile(`(?m)^## Step (\d+)\b`)
)

// textExtensions are the files checked; others (images, archives, test data) are not read.
var textExtensions = []string{".go", ".md", ".yaml", ".yml", ".rego", ".tpl", ".sh", ".txt", ".json"}

func main() {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck: cannot list the tracked files:", err)
		os.Exit(1)
	}
	files := map[string]string{}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if !slices.Contains(textExtensions, path.Ext(name)) && path.Base(name) != "Makefile" {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			continue // a file deleted but not yet staged is not the repository's
		}
		files[name] = string(data)
	}
	onDisk := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if problems := Check(files, onDisk); len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "doccheck: the repository cites what it does not hold:")
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		os.Exit(1)
	}
}

// Check returns one message per citation the files (path to content) do not hold, sorted by file. onDisk
// answers for the linked files that are not read (images, data).
func Check(files map[string]string, onDisk func(string) bool) []string {
	steps := map[string]bool{}
	for _, m := range stepHeading.FindAllStringSubmatch(files[walkthrough], -1) {
		steps[m[1]] = true
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []string
	for _, name := range names {
		if strings.HasPrefix(name, "hack/doccheck/") || strings.HasPrefix(name, "docs/bench/") {
			continue
		}
		content := files[name]
		for _, doc := range outside {
			if strings.Contains(content, doc) {
				out = append(out, fmt.Sprintf("%s:%d: cites %s, which is not in the repository", name, line(content, doc), doc))
			}
		}
		if path.Ext(name) == ".md" {
			out = append(out, brokenLinks(name, content, files, onDisk)...)
		}
		if path.Ext(name) == ".go" || path.Ext(name) == ".md" {
			for _, m := range stepCited.FindAllStringSubmatchIndex(content, -1) {
				if n := content[m[2]:m[3]]; !steps[n] {
					out = append(out, fmt.Sprintf("%s:%d: cites Step %s, which %s does not define", name,
						1+strings.Count(content[:m[0]], "\n"), n, walkthrough))
				}
			}
		}
	}
	return out
}

// brokenLinks returns the relative links of a Markdown file whose target is not a file or folder of files.
func brokenLinks(name, content string, files map[string]string, onDisk func(string) bool) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatchIndex(content, -1) {
		target := content[m[2]:m[3]]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		target, _, _ = strings.Cut(target, "#")
		resolved := path.Clean(path.Join(path.Dir(name), target))
		if !exists(resolved, files) && !onDisk(resolved) {
			out = append(out, fmt.Sprintf("%s:%d: links %s, which is not in the repository", name,
				1+strings.Count(content[:m[0]], "\n"), target))
		}
	}
	return out
}

// exists reports whether p is a file read, or a folder holding one.
func exists(p string, files map[string]string) bool {
	if _, ok := files[p]; ok {
		return true
	}
	for name := range files {
		if strings.HasPrefix(name, p+"/") {
			return true
		}
	}
	return false
}

func line(content, s string) int {
	return 1 + strings.Count(content[:strings.Index(content, s)], "\n")
}
