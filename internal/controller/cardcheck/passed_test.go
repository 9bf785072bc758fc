package cardcheck

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

func TestPassedMemo(t *testing.T) {
	workload := func(uid string, state kueue.CheckState) kueue.Workload {
		return kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)},
			Status: kueue.WorkloadStatus{AdmissionChecks: []kueue.AdmissionCheckState{{Name: Name, State: state}}}}
	}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		reason string
		cached []kueue.Workload
		after  time.Duration
		want   []string
		kept   int
	}{
		"CacheBehind": {reason: "a verdict the cache still shows Pending counts, and is kept",
			cached: []kueue.Workload{workload("a", kueue.CheckStatePending)}, want: []string{"a"}, kept: 1},
		"NotInCache": {reason: "a Workload the cache has not seen yet counts",
			want: []string{"a"}, kept: 1},
		"CacheCaughtUp": {reason: "once the cache shows the verdict, the cache answers and the memo forgets it",
			cached: []kueue.Workload{workload("a", kueue.CheckStateReady)}, want: nil, kept: 0},
		"Expired": {reason: "a verdict the cache never shows is forgotten after passedTTL",
			after: passedTTL + time.Second, want: nil, kept: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := &passedMemo{}
			a := workload("a", kueue.CheckStateReady)
			m.remember(&a, start)
			var got []string
			for _, wl := range m.missing(tc.cached, start.Add(tc.after)) {
				got = append(got, wl.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmissing(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(m.entries) != tc.kept {
				t.Errorf("%s\nmissing(...) kept %d entries, want %d", tc.reason, len(m.entries), tc.kept)
			}
		})
	}
}
