package main

import (
	"context"
	"crypto/tls"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"golang.org/x/sync/errgroup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
)

// runWorkerGateway reads the member clusters named by the kubeconfig Secrets of the members' namespace and
// serves their InstanceTypes, Instances and members, and each InstanceType aggregated across them, on a unix
// socket.
func runWorkerGateway(args []string) error {
	fs := flag.NewFlagSet("worker-gateway", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster holding the member Secrets; in-cluster configuration when empty")
	namespace := fs.String("namespace", workerv1.SystemNamespace, "the gateway's own namespace, where its Service is")
	members := fs.String("members-namespace", gatewayv1.MembersNamespace, "the namespace of the member Secrets (labelled gateway.gpustack.ai/member=true, key kubeconfig); give it nothing else, as the gateway reads every Secret there")
	socket := fs.String("socket", "/var/lib/gpustack/gpustack-operator-worker-gateway.sock", "the unix socket the API is served on")
	interval := fs.Duration("interval", 5*time.Second, "how often the member Secrets are looked at and each member is read")
	timeout := fs.Duration("read-timeout", 5*time.Second, "how long one read of a member may take before it counts as unreachable")
	securePort := fs.Int("secure-port", 0, "serve the API over TLS on this port for kube-apiserver's aggregation layer, and register its APIService; 0 serves only the socket")
	bindAddress := fs.String("bind-address", "0.0.0.0", "the address of the secure port")
	serviceName := fs.String("service-name", "gpustack-operator-worker-gateway", "the Service in --namespace the APIService sends kube-apiserver to")
	servicePort := fs.Int("service-port", 443, "the Service's port")
	dispatch := fs.Bool("dispatch", true, "keep, in this cluster, what Kueue's MultiKueue needs to run Instances created here on the members")
	retention := fs.Duration("retention", 24*time.Hour, "how long what no member offers any more (a member removed for good, a type it deleted) is kept, Inactive, before it is removed from this cluster; a member's outage, Hold or re-registration never removes the types the manager's Instances run on")
	grace := fs.Duration("first-answer-grace", gateway.DefaultFirstAnswerGrace, "how long after start the dispatcher waits for every member's first answer before it writes: a member not read yet would look as if it offered nothing")
	kueueNamespace := fs.String("kueue-namespace", workerv1.KueueNamespace, "the namespace of this cluster's Kueue, where MultiKueue reads the members' kubeconfigs")
	_ = fs.Parse(args)
	ctrl.SetLogger(zap.New())
	logger := ctrl.Log.WithName("worker-gateway")

	cfg, c, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := waitForAPIServer(ctx, cfg, apiServerPoll, logger); err != nil {
		return err
	}
	gw := &gateway.Gateway{Client: c, Namespace: *members, Scheme: scheme.New(), Interval: *interval, Timeout: *timeout, Log: logger}
	lis, err := listenUnix(*socket)
	if err != nil {
		return err
	}
	api := &gateway.Server{Source: gw, WatchInterval: time.Second}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	g, ctx := errgroup.WithContext(ctx)
	if *securePort != 0 {
		secure, err := aggregated(ctx, c, api, *namespace, *serviceName, *bindAddress, *securePort, *servicePort)
		if err != nil {
			return err
		}
		g.Go(func() error {
			<-ctx.Done()
			return secure.Close()
		})
		g.Go(func() error {
			logger.Info("serving for the aggregation layer", "address", secure.Addr, "apiservice", gatewayv1.APIServiceName)
			if err := secure.ListenAndServeTLS("", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return errors.Wrap(err, "cannot serve the API over TLS")
			}
			return nil
		})
	}
	g.Go(func() error { return gw.Run(ctx) })
	if *dispatch {
		d := &gateway.Dispatcher{Client: c, Gateway: gw, Namespace: *members, KueueNamespace: *kueueNamespace, Interval: *interval,
			Retention: *retention, FirstAnswerGrace: *grace, Log: ctrl.Log.WithName("dispatch")}
		g.Go(func() error { return d.Run(ctx) })
	}
	g.Go(func() error {
		<-ctx.Done()
		return srv.Close()
	})
	g.Go(func() error {
		logger.Info("serving", "socket", *socket)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return errors.Wrap(err, "cannot serve the API")
		}
		return nil
	})
	return g.Wait()
}

// aggregated makes the TLS server kube-apiserver's aggregation layer passes the API's requests to, checked with
// the cluster's request-header settings and authorizer, and registers the APIService that sends them there.
func aggregated(ctx context.Context, c client.Client, api http.Handler, namespace, service, bind string, port, servicePort int) (*http.Server, error) {
	rh, err := gateway.ReadRequestHeader(ctx, c)
	if err != nil {
		return nil, err
	}
	cert, err := gateway.Register(ctx, c, namespace, service, int32(servicePort))
	if err != nil {
		return nil, err
	}
	return &http.Server{Addr: net.JoinHostPort(bind, strconv.Itoa(port)), Handler: gateway.Delegated(api, rh, c), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}}, nil
}

// listenUnix listens on a unix socket, replacing one a previous run left; only its owner and group may use it.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, errors.Wrap(err, "cannot create the socket's directory")
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, errors.Wrap(err, "cannot remove the old socket")
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "unix", path)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot listen on %s", path)
	}
	return lis, errors.Wrap(os.Chmod(path, 0o660), "cannot restrict the socket")
}
