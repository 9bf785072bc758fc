package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	const steps = "# The walkthrough\n\n## Step 1: Read the pools\n\n## Step 2: Remove a node\n"
	cases := map[string]struct {
		reason string
		files  map[string]string
		onDisk []string
		want   []string
	}{
		"AllHeld": {
			reason: "Links to files and folders held, anchors, web links and steps the walkthrough defines pass.",
			files: map[string]string{
				walkthrough:  steps,
				"README.md":  "See [the steps](docs/walkthrough.md#step-1), [docs](docs), [Kueue](https://kueue.sigs.k8s.io) and [below](#tests).\n",
				"docs/x.md":  "![chart](bench/cluster.png) and [back](../README.md)\n",
				"pools/a.go": "// Step 2 removes a node.\n",
			},
			onDisk: []string{"docs/bench/cluster.png"},
		},
		"Broken": {
			reason: "A link to a missing file, a step the walkthrough lacks and a document outside the repository are named with their line.",
			files: map[string]string{
				walkthrough:       steps,
				"README.md":       "intro\nRead [the design](docs/design.md).\n",
				"pools/a.go":      "package pools\n\n// Step 7 is not there.\n",
				"pools/b.go":      "// as DESIGN" + ".md says\n",
				"examples/x.yaml": "# ../" + "shared/spec says so\n",
			},
			want: []string{
				"README.md:2: links docs/design.md, which is not in the repository",
				"examples/x.yaml:1: cites ../" + "shared/, which is not in the repository",
				"pools/a.go:3: cites Step 7, which docs/walkthrough.md does not define",
				"pools/b.go:1: cites DESIGN" + ".md, which is not in the repository",
			},
		},
		"NoWalkthrough": {
			reason: "Without the walkthrough page every cited step is missing.",
			files:  map[string]string{"pools/a.go": "// Step 1\n"},
			want:   []string{"pools/a.go:1: cites Step 1, which docs/walkthrough.md does not define"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			onDisk := func(p string) bool {
				for _, d := range tc.onDisk {
					if d == p {
						return true
					}
				}
				return false
			}
			got := Check(tc.files, onDisk)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
