package webhooks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rotation keeps a running worker's webhooks serving the Secret's key pair: when cert-manager renews the
// Secret, or the self-signed pair nears its end and is signed again, it writes the new pair into CertDir, where
// the webhook server's certificate watcher picks it up without a restart, and applies the configurations with
// the new CA. Every replica runs it, for its own CertDir.
type Rotation struct {
	Client  client.Client
	Serving Serving
	// Every is how often the Secret is looked at.
	Every time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log logr.Logger
}

// NeedLeaderElection is false: each replica serves its own webhooks from its own CertDir.
func (r *Rotation) NeedLeaderElection() bool { return false }

// Start checks the key pair every Every until ctx ends; a failed check is logged and tried again.
func (r *Rotation) Start(ctx context.Context) error {
	t := time.NewTicker(r.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := r.Check(ctx); err != nil {
				r.Log.Error(err, "cannot keep the webhook certificate")
			}
		}
	}
}

// Check provisions again when the Secret's pair is not the one being served (renewed), or no longer covers the
// hosts (it then signs a new one, or waits for cert-manager's), or a webhook's CA bundle is not the pair's;
// otherwise it writes nothing.
func (r *Rotation) Check(ctx context.Context) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	hosts, err := r.Serving.Hosts()
	if err != nil {
		return err
	}
	served, err := os.ReadFile(filepath.Join(r.Serving.CertDir, "tls.crt"))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	pair, err := keyPair(ctx, r.Client, r.Serving, hosts, now(), time.Minute)
	if err != nil {
		return err
	}
	if !bytes.Equal(served, pair.Cert) {
		r.Log.Info("the webhook certificate changed: serving the new one")
		return Provision(ctx, r.Client, r.Serving, now(), time.Minute)
	}
	stale, err := r.staleCA(ctx, pair.CA)
	if err != nil {
		return err
	}
	if stale == "" {
		if stale, err = staleAPIService(ctx, r.Client, r.Serving.APIServices, pair.CA); err != nil || stale == "" {
			return err
		}
	}
	// helm adopting or upgrading the configurations may drop a CA bundle, or add a webhook without one.
	r.Log.Info("a CA bundle is not the served pair's: writing it again", "in", stale)
	return Provision(ctx, r.Client, r.Serving, now(), time.Minute)
}

// staleCA names a webhook of the two configurations whose CA bundle is not ca; "" when all carry it, or when
// a configuration is not there (Provision says so).
func (r *Rotation) staleCA(ctx context.Context, ca []byte) (string, error) {
	mutating, validating := &admissionv1.MutatingWebhookConfiguration{}, &admissionv1.ValidatingWebhookConfiguration{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: MutatingName}, mutating); err != nil {
		return "", errors.Wrap(client.IgnoreNotFound(err), "cannot get the mutating webhook configuration")
	}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ValidatingName}, validating); err != nil {
		return "", errors.Wrap(client.IgnoreNotFound(err), "cannot get the validating webhook configuration")
	}
	for _, w := range mutating.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, ca) {
			return MutatingName + "/" + w.Name, nil
		}
	}
	for _, w := range validating.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, ca) {
			return ValidatingName + "/" + w.Name, nil
		}
	}
	return "", nil
}
