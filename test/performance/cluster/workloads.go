package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
)

// benchNamespace is where the workloads run: a namespace the operator's queues serve.
const benchNamespace = "default"

// slicedPool returns the accelerated InstanceType with the most free slice units: the pool the workloads go to.
func slicedPool(ctx context.Context, k client.Client) (string, error) {
	list := &workerv1.InstanceTypeList{}
	if err := k.List(ctx, list); err != nil {
		return "", errors.Wrap(err, "cannot list InstanceTypes")
	}
	best, most := "", int64(0)
	for _, it := range list.Items {
		if v := it.Status.AcceleratorSliced; it.Spec.Acceleratable && v != nil && v.Remaining.Value() > most {
			best, most = it.Name, v.Remaining.Value()
		}
	}
	if best == "" {
		return "", errors.New("no InstanceType offers slices")
	}
	return best, nil
}

// slice returns the workloads' Instance: half a card's memory and all its cores.
func slice(name, pool string) *workerv1.Instance {
	inst := builders.MakeInstance(benchNamespace, name, pool).Slice(50, 100).Obj()
	inst.Labels = map[string]string{"bench": "cluster"}
	return inst
}

// barePodLike returns a plain Kueue Pod in the Instance Pod's queue with its main container's resources: what
// a user submitting the same work without the operator would create.
func barePodLike(p *corev1.Pod) *corev1.Pod {
	main := p.Spec.Containers[0]
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, GenerateName: "bench-pod-", Labels: map[string]string{
			workerv1.LabelQueueName: p.Labels[workerv1.LabelQueueName], "bench": "cluster"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: main.Image, Command: main.Command,
			Resources: main.Resources}}},
	}
}

// probePod creates one Instance of the pool, waits for its Pod and returns a bare Pod shaped like it; the
// Instance is deleted again.
func probePod(ctx context.Context, k client.Client, pool string) (*corev1.Pod, error) {
	inst := slice("bench-probe", pool)
	if err := k.Create(ctx, inst); err != nil {
		return nil, errors.Wrap(err, "cannot create the probe Instance")
	}
	defer func() { _ = k.Delete(context.WithoutCancel(ctx), inst) }()
	pod := &corev1.Pod{}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := k.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: inst.Name}, pod)
		if err == nil {
			return barePodLike(pod), nil
		}
		if time.Now().After(deadline) {
			return nil, errors.Wrap(err, "the probe Instance has no Pod after 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// running are the times from create to Running of the Instances (to phase Ready) and of the bare Pods.
type running struct {
	instances, pods []time.Duration
}

// startWorkloads creates n Instances and n bare Pods alike, interleaved, and waits until all run. It returns
// each one's time from its create call to the watch event that shows it running.
func startWorkloads(ctx context.Context, k client.WithWatch, pool string, bare *corev1.Pod, n int) (running, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	var mu sync.Mutex
	created := map[string]time.Time{}
	var out running
	instW, err := k.Watch(ctx, &workerv1.InstanceList{}, client.InNamespace(benchNamespace), client.MatchingLabels{"bench": "cluster"})
	if err != nil {
		return out, errors.Wrap(err, "cannot watch Instances")
	}
	defer instW.Stop()
	podW, err := k.Watch(ctx, &corev1.PodList{}, client.InNamespace(benchNamespace), client.MatchingLabels{"bench": "cluster"})
	if err != nil {
		return out, errors.Wrap(err, "cannot watch Pods")
	}
	defer podW.Stop()

	errs := make(chan error, 2*n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		for _, make := range []func() client.Object{
			func() client.Object { return slice(fmt.Sprintf("bench-%05d", i), pool) },
			func() client.Object {
				p := bare.DeepCopy()
				p.GenerateName, p.Name = "", fmt.Sprintf("bench-pod-%05d", i)
				return p
			},
		} {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				obj := make()
				key := fmt.Sprintf("%T/%s", obj, obj.GetName())
				mu.Lock()
				created[key] = time.Now()
				mu.Unlock()
				if err := k.Create(ctx, obj); err != nil {
					errs <- errors.Wrapf(err, "cannot create %s", key)
				}
			}()
		}
	}
	done := map[string]bool{}
	record := func(key string, into *[]time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		start, ok := created[key]
		if !ok || done[key] {
			return
		}
		done[key] = true
		*into = append(*into, time.Since(start))
	}
	for len(out.instances) < n || len(out.pods) < n {
		select {
		case err := <-errs:
			return out, err
		case <-ctx.Done():
			return out, errors.Errorf("after 15 minutes %d of %d Instances and %d of %d Pods run", len(out.instances), n, len(out.pods), n)
		case ev, ok := <-instW.ResultChan():
			if !ok {
				return out, errors.New("the Instance watch ended")
			}
			if inst, isInst := ev.Object.(*workerv1.Instance); isInst && ev.Type != watch.Deleted && inst.Status.Phase == workerv1.InstanceReady {
				record(fmt.Sprintf("%T/%s", inst, inst.Name), &out.instances)
			}
		case ev, ok := <-podW.ResultChan():
			if !ok {
				return out, errors.New("the Pod watch ended")
			}
			if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Deleted && pod.Status.Phase == corev1.PodRunning {
				record(fmt.Sprintf("%T/%s", pod, pod.Name), &out.pods)
			}
		}
	}
	wg.Wait()
	return out, nil
}
