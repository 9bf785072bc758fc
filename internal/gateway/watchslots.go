package gateway

import (
	"context"
	"sync"
)

// DefaultMaxWatchesPerClient is how many watches one client may hold open on a replica when the Server does not
// say: informers of every gateway kind in a handful of namespaces, with room to spare.
const DefaultMaxWatchesPerClient = 100

// clientKey is the context key of the client a request is from.
type clientKey struct{}

// withClient returns ctx saying the request is from the user the front proxy named.
func withClient(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, clientKey{}, user)
}

// clientOf is who a request is from: the user the front proxy named, or "" on the unix socket, whose clients
// share one count.
func clientOf(ctx context.Context) string {
	user, _ := ctx.Value(clientKey{}).(string)
	return user
}

// watchSlots counts the watches each client holds open, so that no one client holds the replica's memory and
// connections without bound.
type watchSlots struct {
	mu   sync.Mutex
	open map[string]int
}

// take gives the client a watch unless it holds most already.
func (s *watchSlots) take(client string, most int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[client] >= most {
		return false
	}
	if s.open == nil {
		s.open = map[string]int{}
	}
	s.open[client]++
	return true
}

// give takes back a watch the client took.
func (s *watchSlots) give(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[client]--; s.open[client] <= 0 {
		delete(s.open, client)
	}
}
