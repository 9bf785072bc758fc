// Package toolcache tests toolcache.sh, the Makefile's per-machine cache of the third-party binaries.
package toolcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// build runs toolcache.sh for a wrapper module in module whose "build" counts its runs in a file of the
// module and writes the binary tool into bin, holding the number of the run that built it; it returns the runs
// counted so far.
func build(t *testing.T, cache, module, bin string) int {
	t.Helper()
	runs := filepath.Join(module, "runs")
	command := "echo run >> " + runs + " && wc -l < " + runs + " > " + filepath.Join(bin, "tool")
	cmd := exec.Command("./toolcache.sh", module, bin, "tool", "--", "sh", "-c", command)
	cmd.Env = append(os.Environ(), "TOOLS_CACHE="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("toolcache.sh: %v\n%s", err, out)
	}
	counted, _ := os.ReadFile(runs)
	return strings.Count(string(counted), "run")
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestToolCache(t *testing.T) {
	type step struct {
		reason string
		// sum, when set, is the wrapper module's go.sum from this step on.
		sum string
		// cacheOff runs with TOOLS_CACHE empty.
		cacheOff bool
		// wantRuns is how many times the build has run after this step.
		wantRuns int
		// wantFrom is the run of the build that wrote the binary this step's bin holds.
		wantFrom int
	}
	steps := []step{
		{reason: "The first build runs, and its binary is stored.", wantRuns: 1, wantFrom: 1},
		{reason: "Another clone (another bin) with the same module copies the stored binary: no build.", wantRuns: 1, wantFrom: 1},
		{reason: "A changed go.sum (a dependency moved) builds again.", sum: "example.com/dep v1.1.0 h1:new\n", wantRuns: 2, wantFrom: 2},
		{reason: "And that build is stored too.", wantRuns: 2, wantFrom: 2},
		{reason: "With TOOLS_CACHE empty every build runs.", cacheOff: true, wantRuns: 3, wantFrom: 3},
	}
	dir := t.TempDir()
	module, cache := filepath.Join(dir, "module"), filepath.Join(dir, "cache")
	if err := os.MkdirAll(module, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, data string }{{"go.mod", "module example.com/tools\n"}, {"go.sum", "example.com/dep v1.0.0 h1:old\n"}} {
		if err := os.WriteFile(filepath.Join(module, f.name), []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range steps {
		if s.sum != "" {
			if err := os.WriteFile(filepath.Join(module, "go.sum"), []byte(s.sum), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c := cache
		if s.cacheOff {
			c = ""
		}
		bin := filepath.Join(dir, "clone", strconv.Itoa(i), "bin") // a fresh clone's bin each step
		got := struct{ Runs, From string }{}
		got.Runs = strconv.Itoa(build(t, c, module, bin))
		got.From = read(t, filepath.Join(bin, "tool"))
		want := struct{ Runs, From string }{strconv.Itoa(s.wantRuns), strconv.Itoa(s.wantFrom)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d: %s\nbuilds run, and the run that built bin/tool: -want, +got:\n%s", i, s.reason, diff)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(cache, "*", "complete")); len(entries) != 2 {
		t.Errorf("the cache holds %d complete builds, want 2 (one per go.sum): %v", len(entries), entries)
	}
}
