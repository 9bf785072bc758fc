package instancepod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFlavorLabelsOf(t *testing.T) {
	const t4 = "acceleratable.feature.gpustack.ai/nvidia-tesla-t4"
	nodeT4B := map[string]string{"kubernetes.io/hostname": "node-t4-b", "gpustack.ai/managed": "true", t4: "true", t4 + ".count": "4"}
	oneCard := map[string]string{"gpustack.ai/managed": "true", t4: "true", t4 + ".count": "1"}
	fourCards := map[string]string{"gpustack.ai/managed": "true", t4: "true", t4 + ".count": "4"}
	type args struct {
		node    map[string]string
		flavors []map[string]string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   map[string]string
	}{
		"OwnFlavor": {
			reason: "The walkthrough's pin to node-t4-b asks the 4-card flavor's labels, so Kueue cannot assign the 1-card flavor listed first",
			args:   args{node: nodeT4B, flavors: []map[string]string{oneCard, fourCards}},
			want:   fourCards,
		},
		"NoFlavor": {
			reason: "A node that no flavor of the pool holds adds nothing: the pin waits with the scheduler's reason",
			args:   args{node: map[string]string{"kubernetes.io/hostname": "node-cpu"}, flavors: []map[string]string{oneCard, fourCards}},
			want:   nil,
		},
		"SeveralFlavors": {
			reason: "Flavors that all hold the node keep only the labels they agree on, so Kueue may pick any of them",
			args: args{node: map[string]string{"a": "1", "b": "2", "c": "3"},
				flavors: []map[string]string{{"a": "1", "b": "2"}, {"a": "1", "c": "3"}}},
			want: map[string]string{"a": "1"},
		},
		"NoFlavors": {
			reason: "A pool without flavors adds nothing",
			args:   args{node: nodeT4B},
			want:   nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := FlavorLabelsOf(tc.args.node, tc.args.flavors)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nFlavorLabelsOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
