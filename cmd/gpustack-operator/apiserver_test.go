package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

func TestWaitForAPIServer(t *testing.T) {
	type want struct {
		Asks  int64
		Fails bool
	}
	cases := map[string]struct {
		reason   string
		notReady int64
		cancel   bool
		want     want
	}{
		"Ready": {
			reason: "An API server that answers at once is asked once.",
			want:   want{Asks: 1},
		},
		"Back": {
			reason:   "An API server that is not ready yet is asked again until it is.",
			notReady: 3,
			want:     want{Asks: 4},
		},
		"Stopped": {
			reason:   "A process stopped while it waits returns an error rather than waiting on.",
			notReady: 1 << 30,
			cancel:   true,
			want:     want{Fails: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var asks atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/readyz" {
					http.NotFound(w, r)
					return
				}
				if asks.Add(1) <= tc.notReady {
					http.Error(w, "[-]etcd failed", http.StatusInternalServerError)
					return
				}
				_, _ = w.Write([]byte("ok"))
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.cancel {
				go func() {
					for asks.Load() < 2 {
						time.Sleep(time.Millisecond)
					}
					cancel()
				}()
			}
			err := waitForAPIServer(ctx, &rest.Config{Host: srv.URL}, time.Millisecond, logr.Discard())
			got := want{Fails: err != nil}
			if !tc.cancel {
				got.Asks = asks.Load()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nwaitForAPIServer(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
