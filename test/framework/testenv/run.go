package testenv

import (
	"context"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// RunUntilCleanup runs run (a manager's Start, a server's, an agent's Run) in the background until the spec ends
// or stop is called, whichever is first, and fails the spec when run returns an error. stop returns once run
// has.
func RunUntilCleanup(run func(ctx context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(done)
		gomega.Expect(run(ctx)).To(gomega.Succeed())
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	ginkgo.DeferCleanup(stop)
	return stop
}
