package main

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// apiServerPoll is how often a starting process asks whether the API server is back.
const apiServerPoll = 2 * time.Second

// readyConfig loads a kubeconfig (the in-cluster one when empty) and waits until its API server is ready.
func readyConfig(ctx context.Context, kubeconfig string) (*rest.Config, error) {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return cfg, waitForAPIServer(ctx, cfg, apiServerPoll, ctrl.Log.WithName("startup"))
}

// waitForAPIServer returns once the API server answers its /readyz, asking every interval. A process started
// while the API server is away (restarting, or the node cut off) waits for it here: exiting at its first failed
// request would put it into the kubelet's restart back-off, which grows to five minutes and keeps it down long
// after the API server is back. The first failure is logged, and then one in ten.
func waitForAPIServer(ctx context.Context, cfg *rest.Config, every time.Duration, log logr.Logger) error {
	c := rest.CopyConfig(cfg)
	c.Timeout = 5 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return errors.Wrap(err, "cannot create a client of the API server")
	}
	failures := 0
	err = wait.PollUntilContextCancel(ctx, every, true, func(ctx context.Context) (bool, error) {
		_, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			if failures > 0 {
				log.Info("the API server answers again", "failedAsks", failures)
			}
			return true, nil
		}
		if failures%10 == 0 {
			log.Info("waiting for the API server", "host", c.Host, "error", err.Error())
		}
		failures++
		return false, nil
	})
	return errors.Wrap(err, "stopped waiting for the API server")
}
