package ledger

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

func TestRecordedMemo(t *testing.T) {
	pod := func(uid, cards string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), Annotations: map[string]string{"other": "kept"}}}
		if cards != "" {
			p.Annotations[workerv1.AnnotationAllocated] = cards
		}
		return p
	}
	const written = `{"main":["GPU-1"]}`
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		reason string
		cached []corev1.Pod
		after  time.Duration
		want   []string
		kept   int
	}{
		"CacheBehind": {reason: "a Pod the cache shows without the cards just recorded gets them, and the memo keeps them",
			cached: []corev1.Pod{pod("a", ""), pod("b", "")}, want: []string{written, ""}, kept: 1},
		"CacheCaughtUp": {reason: "once the cache shows the cards, the memo forgets them",
			cached: []corev1.Pod{pod("a", written)}, want: []string{written}, kept: 0},
		"Expired": {reason: "cards the cache never shows are forgotten after recordedTTL",
			cached: []corev1.Pod{pod("a", "")}, after: recordedTTL + time.Second, want: []string{""}, kept: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := &recordedMemo{}
			m.remember("a", written, start)
			m.overlay(tc.cached, start.Add(tc.after))
			var got []string
			for _, p := range tc.cached {
				got = append(got, p.Annotations[workerv1.AnnotationAllocated])
				if p.Annotations["other"] != "kept" {
					t.Errorf("%s\noverlay lost another annotation of %s", tc.reason, p.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\noverlay(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(m.entries) != tc.kept {
				t.Errorf("%s\noverlay(...) kept %d entries, want %d", tc.reason, len(m.entries), tc.kept)
			}
		})
	}
}
