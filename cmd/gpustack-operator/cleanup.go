package main

import (
	"context"
	"flag"
	"os"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/controller/cardcheck"
	"github.com/gpustack/gpustack-operator/internal/controller/nodecapacity"
	"github.com/gpustack/gpustack-operator/internal/uninstall"
)

// runCleanup removes what the operator created at run time; the chart's post-delete hook runs it.
func runCleanup(args []string) error {
	fs := flag.NewFlagSet("cleanup", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig; in-cluster configuration when empty")
	secret := fs.String("webhook-secret", "gpustack-worker-webhook-tls", "the worker's webhook Secret, in its namespace (POD_NAMESPACE)")
	workerPods := fs.String("worker-pods", "", "label selector of the worker's Pods: wait until they are gone before removing anything")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the worker's Pods, and for the CRDs, to go")
	deleteVolumes := fs.Bool("delete-volumes", false, "delete the claims of the users' InstancePersistentVolumes too; by default they are kept, orphaned")
	_ = fs.Parse(args)
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return errors.Wrap(err, "cannot load the kubeconfig")
	}
	// Removing a cluster's worth of objects one by one: the default 5 requests a second would take minutes.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return errors.Wrap(err, "cannot create a client")
	}
	return uninstall.Cleanup(context.Background(), c, uninstall.Options{
		Namespace: podNamespace(), WebhookSecret: *secret, WorkerPods: *workerPods, Timeout: *timeout, Log: os.Stdout, DeleteVolumes: *deleteVolumes,
		ComposedAnnotation: workerv1.AnnotationComposedHash, CapacityFieldManager: nodecapacity.FieldManager, AdmissionCheck: cardcheck.Name,
	})
}
