package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpustack/gpustack-operator/internal/follow"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
)

// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=get;update;list;watch,resourceNames=gpustack-operator-worker-gateway-tls
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=get;patch,resourceNames=v1.gateway.gpustack.ai

// Serving keeps what every replica of the gateway serves the aggregation layer with current: the serving key
// pair of the Secret Certificate.Secret (self-signed by the first replica and shared by the others, or issued
// by cert-manager), whose CA the chart's APIService carries, and the front proxy's request-header settings.
// Both are read again every Every, so a renewed certificate or a rotated front-proxy CA is served without a
// restart; a replica never signs a pair of its own that the APIService would not trust. With Watch, the Secret
// is also followed as it changes, so every replica serves a new pair (whose CA the APIService now carries, the
// old one no longer) within a moment of the replica that made it, not up to Every later.
type Serving struct {
	Client client.Client
	// Watch follows the Secret; nil reads it every Every only.
	Watch       client.WithWatch
	Certificate webhooks.Serving
	// Every is how often the Secret and kube-system/extension-apiserver-authentication are read again.
	Every time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	Log logr.Logger

	cert   atomic.Pointer[servedPair]
	header atomic.Pointer[RequestHeader]
}

// servedPair is the key pair being served, with the PEM it was read from, to tell a renewal.
type servedPair struct {
	pem  []byte
	cert tls.Certificate
}

// NeedLeaderElection is false: every replica serves.
func (s *Serving) NeedLeaderElection() bool { return false }

// Refresh reads the key pair and the request-header settings, and serves them from now on; the pair's CA is
// written into the APIService where it is not there yet, which is waited for up to timeout.
func (s *Serving) Refresh(ctx context.Context, timeout time.Duration) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	pair, err := webhooks.ProvisionAPIServer(ctx, s.Client, s.Certificate, now(), timeout)
	if err != nil {
		return err
	}
	if served := s.cert.Load(); served == nil || !bytes.Equal(served.pem, pair.Cert) {
		cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
		if err != nil {
			return errors.Wrapf(err, "cannot load the key pair of secret %s/%s", s.Certificate.Namespace, s.Certificate.Secret)
		}
		if served != nil {
			s.Log.Info("the serving certificate changed: serving the new one", "secret", s.Certificate.Secret)
		}
		s.cert.Store(&servedPair{pem: pair.Cert, cert: cert})
	}
	rh, err := ReadRequestHeader(ctx, s.Client)
	if err != nil {
		return err
	}
	s.header.Store(&rh)
	return nil
}

// Start refreshes every Every, and at each change of the Secret when Watch is set, until ctx ends; a failed
// refresh is logged, the last good pair and settings served meanwhile, and tried again.
func (s *Serving) Start(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	if s.Watch != nil {
		// Its changes (made, renewed, deleted) are read at once; meanwhile the ticks read the Secret.
		go follow.ByName(ctx, s.Watch, &corev1.SecretList{}, s.Certificate.Namespace, s.Certificate.Secret, time.Second, changed, func(err error) {
			s.Log.Error(err, "cannot watch the serving Secret; reading it every interval", "secret", s.Certificate.Secret)
		})
	}
	t := time.NewTicker(s.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-changed:
		}
		if err := s.Refresh(ctx, time.Minute); err != nil {
			s.Log.Error(err, "cannot refresh what the gateway serves the aggregation layer with")
		}
	}
}

// TLSConfig serves the current key pair and asks for the front proxy's client certificate.
func (s *Serving) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.RequestClientCert,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			served := s.cert.Load()
			if served == nil {
				return nil, errors.New("no serving certificate yet")
			}
			return &served.cert, nil
		}}
}

// RequestHeader returns the request-header settings read last; none before the first Refresh.
func (s *Serving) RequestHeader() RequestHeader {
	if rh := s.header.Load(); rh != nil {
		return *rh
	}
	return RequestHeader{}
}
