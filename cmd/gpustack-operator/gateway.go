package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
	"github.com/gpustack/gpustack-operator/internal/webhooks"
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
	securePort := fs.Int("secure-port", 0, "serve the API over TLS on this port for kube-apiserver's aggregation layer, and keep the caBundle of the APIService "+gatewayv1.APIServiceName+" (which the chart makes); 0 serves only the socket")
	bindAddress := fs.String("bind-address", "0.0.0.0", "the address of the secure port")
	serviceName := fs.String("service-name", "gpustack-operator-worker-gateway", "the Service in --namespace the APIService sends kube-apiserver to: the serving certificate names it")
	dispatch := fs.Bool("dispatch", true, "keep, in this cluster, what Kueue's MultiKueue needs to run Instances created here on the members")
	retention := fs.Duration("retention", 24*time.Hour, "how long what no member offers any more (a member removed for good, a type it deleted) is kept, Inactive, before it is removed from this cluster; a member's outage, Hold or re-registration never removes the types the manager's Instances run on")
	grace := fs.Duration("first-answer-grace", gateway.DefaultFirstAnswerGrace, "how long after start the dispatcher waits for every member's first answer before it writes: a member not read yet would look as if it offered nothing")
	maxWatches := fs.Int("max-watches-per-client", gateway.DefaultMaxWatchesPerClient, "how many watches one client (the user the front proxy names) may hold open at once; one more is refused with 429 Too Many Requests")
	kueueNamespace := fs.String("kueue-namespace", workerv1.KueueNamespace, "the namespace of this cluster's Kueue, where MultiKueue reads the members' kubeconfigs")
	leaderElect := fs.Bool("leader-elect", true, "dispatch from one replica at a time, the holder of the Lease "+gatewayLease+" in --namespace; every replica serves the API")
	shutdownDelay := fs.Duration("shutdown-delay", 5*time.Second, "how long a stopping replica goes on serving the aggregation layer, while kube-apiserver stops sending it requests")
	certManager := fs.Bool("cert-manager", false, "cert-manager issues the serving certificate into --certificate-secret; otherwise the first replica self-signs it there")
	health := fs.String("health-probe-bind-address", ":8081", "address of the health probes (/readyz passes once every member was read once); 0 turns them off")
	certSecret := fs.String("certificate-secret", gatewayv1.ServingSecretName, "the Secret in --namespace holding the serving certificate every replica serves, whose CA the APIService carries")
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
	// The manager elects the dispatcher's replica; the rest runs on every replica.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: *health,
		LeaderElection: *leaderElect && *dispatch, LeaderElectionID: gatewayLease, LeaderElectionNamespace: *namespace,
		LeaderElectionReleaseOnCancel: true})
	if err != nil {
		return errors.Wrap(err, "cannot create the manager")
	}
	gw := &gateway.Gateway{Client: c, Namespace: *members, Scheme: scheme.New(), Interval: *interval, Timeout: *timeout, Log: logger,
		Answers: &gateway.Answers{Client: c, Namespace: *namespace}}
	lis, err := listenUnix(*socket)
	if err != nil {
		return err
	}
	api := &gateway.Server{Source: gw, WatchInterval: time.Second, MaxWatchesPerClient: *maxWatches}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	runnables := []manager.Runnable{everyReplica(gw.Run), everyReplica(api.Follow), everyReplica(func(ctx context.Context) error {
		logger.Info("serving", "socket", *socket)
		return serveUntil(ctx, srv, func() error { return srv.Serve(lis) }, 0)
	})}
	if *securePort != 0 {
		watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			return errors.Wrap(err, "cannot create a client")
		}
		serving := &gateway.Serving{Client: c, Watch: watcher, Every: 30 * time.Second, Log: logger, Certificate: webhooks.Serving{Namespace: *namespace,
			Service: *serviceName, Secret: *certSecret, CertManager: *certManager, APIServices: []string{gatewayv1.APIServiceName}}}
		// helm makes the APIService after the Deployment: it is waited for.
		if err := serving.Refresh(ctx, 5*time.Minute); err != nil {
			return err
		}
		secure := &http.Server{Addr: net.JoinHostPort(*bindAddress, strconv.Itoa(*securePort)), ReadHeaderTimeout: 10 * time.Second,
			Handler: gateway.Delegated(api, serving.RequestHeader, c), TLSConfig: serving.TLSConfig()}
		runnables = append(runnables, serving, everyReplica(func(ctx context.Context) error {
			logger.Info("serving for the aggregation layer", "address", secure.Addr, "apiservice", gatewayv1.APIServiceName)
			return serveUntil(ctx, secure, func() error { return secure.ListenAndServeTLS("", "") }, *shutdownDelay)
		}))
	}
	// The members' answers are kept by one replica (the Lease's holder, where there is a Lease) and read by each
	// as it starts.
	runnables = append(runnables, manager.RunnableFunc(gw.KeepAnswers))
	if *dispatch {
		d := &gateway.Dispatcher{Client: c, Gateway: gw, Namespace: *members, KueueNamespace: *kueueNamespace, Interval: *interval,
			Retention: *retention, FirstAnswerGrace: *grace, Log: ctrl.Log.WithName("dispatch")}
		// Two dispatchers would apply and prune the same objects: only the Lease's holder runs it.
		runnables = append(runnables, manager.RunnableFunc(d.Run))
	}
	for _, r := range runnables {
		if err := mgr.Add(r); err != nil {
			return errors.Wrap(err, "cannot add to the manager")
		}
	}
	if err := mgr.AddReadyzCheck("members-read", gw.MembersRead); err != nil {
		return errors.Wrap(err, "cannot add the readiness check")
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return errors.Wrap(err, "cannot add the health check")
	}
	return mgr.Start(ctx)
}

// gatewayLease is the Lease the gateway's replicas elect their dispatcher with.
const gatewayLease = "gpustack-operator-worker-gateway"

// everyReplica is a runnable that runs on every replica, not only on the Lease's holder.
type everyReplica func(ctx context.Context) error

// Start runs it.
func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false: every replica runs it.
func (f everyReplica) NeedLeaderElection() bool { return false }

// serveUntil serves with serve until ctx ends; then it goes on answering for delay, while kube-apiserver
// learns that the replica stops and sends its requests to another, and stops, letting the requests in flight
// end for up to 10 seconds.
func serveUntil(ctx context.Context, srv *http.Server, serve func() error, delay time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- serve() }()
	select {
	case err := <-done:
		return errors.Wrap(err, "cannot serve the API")
	case <-ctx.Done():
	}
	time.Sleep(delay)
	stop, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		// Watches outlast the grace: closing ends them, and their clients watch again elsewhere.
		_ = srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return errors.Wrap(err, "cannot serve the API")
	}
	return nil
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
