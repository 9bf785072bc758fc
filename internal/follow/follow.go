// Package follow tells a reader of one object when it changes, through a watch of that object alone, so the
// reader reads it again within moments instead of at its next interval.
package follow

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ByName signals changed at every event of the object namespace/name of list's kind (without blocking: one
// signal waiting is enough, as the reader reads the latest), watching it again whenever its watch ends, until
// ctx ends. A watch that cannot start is told to failed and tried again after retry; one that ends is started
// again a second later, so a watch that ends at once, again and again, does not spin.
func ByName(ctx context.Context, w client.WithWatch, list client.ObjectList, namespace, name string, retry time.Duration,
	changed chan<- struct{}, failed func(error)) {
	for ctx.Err() == nil {
		wait := time.Second
		wi, err := w.Watch(ctx, list, client.InNamespace(namespace), client.MatchingFields{"metadata.name": name})
		if err != nil {
			failed(err)
			wait = retry
		} else {
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					break
				}
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			wi.Stop()
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}
