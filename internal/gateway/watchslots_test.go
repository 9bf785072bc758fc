package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServerWatchBound holds each client to MaxWatchesPerClient open watches: one more is refused with 429 and
// the client named, another client is not held to the first one's count, and a watch that ends gives its slot
// back.
func TestServerWatchBound(t *testing.T) {
	s := testServer(fixed(nil))
	s.MaxWatchesPerClient = 2
	// As Delegated does: the request is from the user the front proxy named.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeHTTP(w, r.WithContext(withClient(r.Context(), r.Header.Get("X-User"))))
	}))
	defer srv.Close()
	watch := func(user string) (int, string, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/apis/gateway.gpustack.ai/v1/aggregatedinstancetypes?watch=true", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-User", user)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		if resp.StatusCode != http.StatusOK {
			_ = json.NewDecoder(resp.Body).Decode(&st)
			_ = resp.Body.Close()
		}
		return resp.StatusCode, st.Message, cancel
	}
	type answer struct {
		Code    int
		Message string
	}
	var got []answer
	var open []context.CancelFunc
	for _, user := range []string{"alice", "alice", "alice", "bob"} {
		code, msg, cancel := watch(user)
		got, open = append(got, answer{code, msg}), append(open, cancel)
	}
	want := []answer{{Code: http.StatusOK}, {Code: http.StatusOK},
		{Code: http.StatusTooManyRequests, Message: `user "alice" holds 2 watches open on the gateway, the most one client may: close one (or ask the administrator to raise --max-watches-per-client)`},
		{Code: http.StatusOK}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watches of alice, alice, alice and bob: -want, +got:\n%s", diff)
	}
	open[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, cancel := watch("alice")
		defer cancel()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's watch is still refused (%d) after one of hers ended", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, cancel := range open {
		cancel()
	}
}
