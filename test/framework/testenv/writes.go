package testenv

import (
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"context"
	"sync"
	"sync/atomic"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	return interceptWrites(c, func(verb string, o client.Object) error {
		w.add(verb, o)
		return nil
	}), w
}

// Faults counts the errors InjectFaults injected.
type Faults struct{ injected, writes atomic.Int64 }

// Injected returns how many writes failed on purpose.
func (f *Faults) Injected() int64 { return f.injected.Load() }

// InjectFaults wraps c so that every nth write fails before it reaches the API server, alternately with a
// Conflict (409) and an InternalError (500), as a busy or restarting API server answers; the others go through.
func InjectFaults(c client.WithWatch, every int64) (client.WithWatch, *Faults) {
	f := &Faults{}
	return interceptWrites(c, func(verb string, o client.Object) error {
		if f.writes.Add(1)%every != 0 {
			return nil
		}
		name := "?"
		if o != nil {
			name = o.GetName()
		}
		gr := schema.GroupResource{Resource: verb}
		if f.injected.Add(1)%2 == 0 {
			return apierrors.NewInternalError(errors.Errorf("injected fault on %s %s", verb, name))
		}
		return apierrors.NewConflict(gr, name, errors.Errorf("injected fault on %s %s", verb, name))
	}), f
}

// interceptWrites wraps c so that hook sees every write, of objects and of their subresources, before it goes
// to the API server; an error from hook is the write's error.
func interceptWrites(c client.WithWatch, hook func(verb string, o client.Object) error) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := hook("create", o); err != nil {
				return err
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if err := hook("update", o); err != nil {
				return err
			}
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := hook("patch", o); err != nil {
				return err
			}
			return c.Patch(ctx, o, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, o runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := hook("apply", nil); err != nil {
				return err
			}
			return c.Apply(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if err := hook("delete", o); err != nil {
				return err
			}
			return c.Delete(ctx, o, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteAllOfOption) error {
			if err := hook("deleteallof", o); err != nil {
				return err
			}
			return c.DeleteAllOf(ctx, o, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, o, s client.Object, opts ...client.SubResourceCreateOption) error {
			if err := hook(sub+" create", o); err != nil {
				return err
			}
			return c.SubResource(sub).Create(ctx, o, s, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := hook(sub+" update", o); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := hook(sub+" patch", o); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, o runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if err := hook(sub+" apply", nil); err != nil {
				return err
			}
			return c.SubResource(sub).Apply(ctx, o, opts...)
		},
	})
}
