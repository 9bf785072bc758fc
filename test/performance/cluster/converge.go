package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	nfdv1alpha1 "sigs.k8s.io/node-feature-discovery/api/nfd/v1alpha1"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// settleQuiet is how long no InstanceType status may change before the cluster counts as settled.
const settleQuiet = 3 * time.Second

// statuses returns every InstanceType's status, encoded, by name, and the list's resource version.
func statuses(ctx context.Context, k client.WithWatch) (map[string]string, string, error) {
	list := &workerv1.InstanceTypeList{}
	if err := k.List(ctx, list); err != nil {
		return nil, "", errors.Wrap(err, "cannot list InstanceTypes")
	}
	out := map[string]string{}
	for i := range list.Items {
		data, err := json.Marshal(list.Items[i].Status)
		if err != nil {
			return nil, "", errors.Wrap(err, "cannot encode an InstanceType status")
		}
		out[list.Items[i].Name] = string(data)
	}
	return out, list.ResourceVersion, nil
}

// watchStatuses watches InstanceTypes from a resource version and sends the time of every status change.
func watchStatuses(ctx context.Context, k client.WithWatch, last map[string]string, rv string) (<-chan time.Time, error) {
	w, err := k.Watch(ctx, &workerv1.InstanceTypeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return nil, errors.Wrap(err, "cannot watch InstanceTypes")
	}
	changes := make(chan time.Time, 64)
	go func() {
		defer close(changes)
		defer w.Stop()
		for ev := range w.ResultChan() {
			it, ok := ev.Object.(*workerv1.InstanceType)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			data, _ := json.Marshal(it.Status)
			if ev.Type == watch.Deleted || last[it.Name] != string(data) {
				last[it.Name] = string(data)
				changes <- time.Now()
			}
		}
	}()
	return changes, nil
}

// settle waits until no InstanceType status has changed for settleQuiet.
func settle(ctx context.Context, changes <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
		case <-time.After(settleQuiet):
			return
		}
	}
}

// convergeTimes are the flips' times: the whole path, and NFD's part of it (the NodeFeature patched until the
// Node shows the label); the rest is the operator's (the Node's label until an InstanceType's status changed).
type convergeTimes struct {
	total, nfd, ours []time.Duration
}

// converge flips gpustack.ai/managed on the worker NodeFeature of spread-out nodes, off and back on, flips
// times in all, and times each flip: the whole path of NFD labelling the Node, the composer recomputing and
// the status written, and the part up to the Node's label.
func converge(ctx context.Context, k client.WithWatch, nodes []string, flips int) (convergeTimes, error) {
	var out convergeTimes
	for f := range flips {
		node := nodes[(f/2)*len(nodes)/max(flips/2, 1)%len(nodes)]
		value := "false"
		if f%2 == 1 {
			value = "true"
		}
		total, nfd, err := flip(ctx, k, node, value)
		if err != nil {
			return out, errors.Wrapf(err, "flip %d of node %s to %s", f+1, node, value)
		}
		out.total, out.nfd, out.ours = append(out.total, total), append(out.nfd, nfd), append(out.ours, max(total-nfd, 0))
	}
	return out, nil
}

// flip sets one node's managed label and times the first InstanceType status change and the Node's label,
// then waits for the statuses to settle so the next flip starts quiet.
func flip(ctx context.Context, k client.WithWatch, node, value string) (total, nfd time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	last, rv, err := statuses(ctx, k)
	if err != nil {
		return 0, 0, err
	}
	changes, err := watchStatuses(ctx, k, last, rv)
	if err != nil {
		return 0, 0, err
	}
	labelled, err := watchLabel(ctx, k, node, workerv1.LabelManaged, value)
	if err != nil {
		return 0, 0, err
	}
	nf := &nfdv1alpha1.NodeFeature{}
	nf.Namespace, nf.Name = workerv1.SystemNamespace, workerv1.NodeFeatureName(node, workerv1.NodeFeatureProfile)
	patch := fmt.Sprintf(`{"spec":{"labels":{%q:%q}}}`, workerv1.LabelManaged, value)
	start := time.Now()
	if err := k.Patch(ctx, nf, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return 0, 0, errors.Wrap(err, "cannot patch the worker NodeFeature")
	}
	var changed, shown time.Time
	for changed.IsZero() || shown.IsZero() {
		select {
		case <-ctx.Done():
			return 0, 0, errors.Errorf("within 2 minutes: InstanceType status changed %t, Node labelled %t", !changed.IsZero(), !shown.IsZero())
		case at, ok := <-changes:
			if !ok {
				return 0, 0, errors.New("the InstanceType watch ended")
			}
			if changed.IsZero() {
				changed = at
			}
		case at, ok := <-labelled:
			if !ok {
				return 0, 0, errors.New("the Node watch ended")
			}
			shown = at
			labelled = nil
		}
	}
	settle(ctx, changes)
	return changed.Sub(start), shown.Sub(start), nil
}

// watchLabel watches one Node and sends the time its label key first shows value (once), then stops.
func watchLabel(ctx context.Context, k client.WithWatch, node, key, value string) (<-chan time.Time, error) {
	w, err := k.Watch(ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": node})
	if err != nil {
		return nil, errors.Wrap(err, "cannot watch the Node")
	}
	out := make(chan time.Time, 1)
	go func() {
		defer close(out)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && n.Labels[key] == value {
				out <- time.Now()
				return
			}
		}
	}()
	return out, nil
}
