package settingsapi

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"

	"github.com/gpustack/gpustack-operator/apis/settings/openapi"
	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
)

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,verbs=get;list;watch,resourceNames=extension-apiserver-authentication

// Server serves settings.gpustack.ai/v1 on Port, as the aggregation layer of kube-apiserver reaches it: callers
// are authenticated and authorized by kube-apiserver (the front proxy's client certificate and headers, or a
// bearer token by TokenReview; SubjectAccessReview for every request), as every aggregated API server does.
// It runs on every replica of the worker, leader or not.
type Server struct {
	// Port is the port it listens on, on every address.
	Port int
	// CertFile and KeyFile are its serving certificate, reloaded when they change (the webhooks' pair, which
	// covers the Service the APIService names).
	CertFile, KeyFile string
	// Kubeconfig is where kube-apiserver is, to delegate authentication and authorization to; empty is the
	// in-cluster configuration.
	Kubeconfig string
	// Storage is the settings resource.
	Storage *REST
}

// NeedLeaderElection is false: every replica serves, so the APIService stays available through a failover.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	server, err := s.new()
	if err != nil {
		return err
	}
	return errors.Wrap(server.PrepareRun().RunWithContext(ctx), "cannot serve the settings API")
}

// Ready answers the readiness probe: nil once the server accepts TLS connections.
func (s *Server) Ready(_ *http.Request) error {
	d := &net.Dialer{Timeout: time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only whether it answers
	if err != nil {
		return errors.Wrap(err, "the settings API does not answer yet")
	}
	return conn.Close()
}

// new builds the server: one API group, one resource, its OpenAPI, and the delegated authentication and
// authorization of an aggregated API server; no admission and no storage of its own.
func (s *Server) new() (*genericapiserver.GenericAPIServer, error) {
	scheme := Scheme()
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewRecommendedConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "gpustack-operator settings"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "gpustack-operator settings"

	serving := genericoptions.NewSecureServingOptions().WithLoopback()
	serving.BindPort = s.Port
	serving.ServerCert.CertKey = genericoptions.CertKey{CertFile: s.CertFile, KeyFile: s.KeyFile}
	if err := serving.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, errors.Wrap(err, "cannot configure the settings API's serving")
	}
	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = s.Kubeconfig
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, cfg.OpenAPIConfig); err != nil {
		return nil, errors.Wrap(err, "cannot configure the settings API's authentication")
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = s.Kubeconfig
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return nil, errors.Wrap(err, "cannot configure the settings API's authorization")
	}

	server, err := cfg.Complete().New("gpustack-settings", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, errors.Wrap(err, "cannot build the settings API server")
	}
	group := genericapiserver.NewDefaultAPIGroupInfo(settingsv1.GroupVersion.Group, scheme, runtime.NewParameterCodec(scheme), codecs)
	group.VersionedResourcesStorageMap[settingsv1.GroupVersion.Version] = map[string]rest.Storage{"settings": s.Storage}
	if err := server.InstallAPIGroup(&group); err != nil {
		return nil, errors.Wrap(err, "cannot install settings.gpustack.ai/v1")
	}
	return server, nil
}

// Scheme is the settings API's scheme: settings.gpustack.ai/v1, whose types also stand for the group's
// internal version (there is one version and nothing to convert), and the meta types every API server
// serves.
func Scheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(settingsv1.AddToScheme(scheme))
	scheme.AddKnownTypes(schema.GroupVersion{Group: settingsv1.GroupVersion.Group, Version: runtime.APIVersionInternal},
		&settingsv1.Setting{}, &settingsv1.SettingList{})
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
	return scheme
}
