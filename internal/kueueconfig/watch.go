package kueueconfig

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/follow"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch,resourceNames=kueue-manager-config

// Watch reads the running Kueue's configuration when it changes, and every interval, and keeps what it lacks.
// The worker reads it by name only (no cache, no right to list ConfigMaps but this one: a list or watch with its
// name as field selector), so a change shows within seconds where Watcher is set and within one interval where
// it is not or its watch fails.
type Watch struct {
	// Reader gets the ConfigMap from the API server.
	Reader client.Reader
	// Watcher, when set, watches the ConfigMap by name, so a change is read at once.
	Watcher client.WithWatch
	// Namespace and Name locate the ConfigMap; Namespace and ConfigMap when empty.
	Namespace, Name string
	// Every is how often to read it; a minute when zero.
	Every time.Duration
	// Changed is called when what the configuration lacks changes, after Problems says the new answer.
	Changed func()
	// Log says what changed.
	Log logr.Logger

	mu       sync.Mutex
	checked  bool
	problems []string
}

// Problems returns what the configuration lacks, one line each, and whether it has been read at all.
func (w *Watch) Problems() ([]string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.problems, w.checked
}

// Start reads the configuration until ctx ends: at once, on every change the watch sees, and every interval.
func (w *Watch) Start(ctx context.Context) error {
	every := w.Every
	if every <= 0 {
		every = time.Minute
	}
	changed := make(chan struct{}, 1)
	if w.Watcher != nil {
		ns, name := w.where()
		// One that cannot start is tried again after the interval, which the reads keep to meanwhile.
		go follow.ByName(ctx, w.Watcher, &corev1.ConfigMapList{}, ns, name, every, changed, func(err error) {
			w.Log.V(1).Info("cannot watch Kueue's configuration; reading it every interval", "error", err.Error())
		})
	}
	for {
		w.Check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-time.After(every):
		}
	}
}

// Check reads the configuration once.
func (w *Watch) Check(ctx context.Context) {
	problems := w.read(ctx)
	w.mu.Lock()
	changed := !w.checked || !slices.Equal(w.problems, problems)
	w.checked, w.problems = true, problems
	w.mu.Unlock()
	if !changed {
		return
	}
	if len(problems) == 0 {
		w.Log.Info("Kueue's configuration carries what the operator needs")
	} else {
		w.Log.Info("Kueue's configuration lacks what the operator needs: its queues will not admit", "missing", strings.Join(problems, "; "))
	}
	if w.Changed != nil {
		w.Changed()
	}
}

// where is the ConfigMap's namespace and name, the defaults where unset.
func (w *Watch) where() (string, string) {
	ns, name := w.Namespace, w.Name
	if ns == "" {
		ns = workerv1.KueueNamespace
	}
	if name == "" {
		name = ConfigMap
	}
	return ns, name
}

func (w *Watch) read(ctx context.Context) []string {
	ns, name := w.where()
	where := "ConfigMap " + ns + "/" + name
	cm := &corev1.ConfigMap{}
	if err := w.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return []string{where + " is not there: install Kueue from its manifests or chart, which keep its configuration there"}
		}
		return []string{"cannot read " + where + ": " + err.Error()}
	}
	data, ok := cm.Data[ConfigKey]
	if !ok {
		return []string{where + " has no " + ConfigKey}
	}
	cfg, err := Parse([]byte(data))
	if err != nil {
		return []string{where + ": " + err.Error()}
	}
	return Check(cfg)
}
