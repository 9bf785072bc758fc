package testenv

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"context"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Writes records the API writes made through a client that CountWrites wrapped, so a test can say that a
// converged reconcile writes nothing.
type Writes struct {
	mu   sync.Mutex
	list []string
}

// List returns the writes so far, each as "verb kind/name".
func (w *Writes) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// ExpectConverged runs reconcile once more and expects it to succeed without a single write: a controller
// that is converged leaves the API server alone.
func (w *Writes) ExpectConverged(reconcile func() error) {
	ginkgo.GinkgoHelper()
	w.Reset()
	gomega.Expect(reconcile()).To(gomega.Succeed())
	gomega.Expect(w.List()).To(gomega.BeEmpty(), "a converged reconcile wrote")
}

// Reset forgets the writes so far.
func (w *Writes) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = nil
}

func (w *Writes) add(verb string, o client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := "?"
	if o != nil {
		name = o.GetName()
	}
	w.list = append(w.list, verb+" "+name)
}

// CountWrites wraps c so that every create, update, patch, apply and delete, of objects and of their
// subresources, is recorded before it goes to the API server.
func CountWrites(c client.WithWatch) (client.WithWatch, *Writes) {
	w := &Writes{}
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			w.add("create", o)
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			w.add("update", o)
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add("patch", o)
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.add("apply", nil)
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			w.add("delete", o)
			return c.Delete(ctx, o, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteAllOfOption) error {
			w.add("deleteallof", o)
			return c.DeleteAllOf(ctx, o, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, o, s client.Object, opts ...client.SubResourceCreateOption) error {
			w.add(sub+" create", o)
			return c.SubResource(sub).Create(ctx, o, s, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(sub+" update", o)
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(sub+" patch", o)
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}), w
}
