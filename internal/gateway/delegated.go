package gateway

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
)

// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,resourceNames=extension-apiserver-authentication,verbs=get
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// RequestHeader is how kube-apiserver's aggregation layer says whom a request it passes on is for: its front
// proxy presents a client certificate signed by CA, with a common name among AllowedNames (any when none are
// named), and names the user and the groups in headers. kube-apiserver publishes it in the ConfigMap
// kube-system/extension-apiserver-authentication.
type RequestHeader struct {
	CA              *x509.CertPool
	AllowedNames    []string
	UsernameHeaders []string
	GroupHeaders    []string
}

// ReadRequestHeader reads the aggregation layer's request-header settings from
// kube-system/extension-apiserver-authentication.
func ReadRequestHeader(ctx context.Context, c client.Reader) (RequestHeader, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "extension-apiserver-authentication"}, cm); err != nil {
		return RequestHeader{}, errors.Wrap(err, "cannot read kube-system/extension-apiserver-authentication")
	}
	ca := cm.Data["requestheader-client-ca-file"]
	if ca == "" {
		return RequestHeader{}, errors.New("kube-apiserver names no request-header CA (--requestheader-client-ca-file): it cannot pass requests on to an aggregated API")
	}
	rh := RequestHeader{CA: x509.NewCertPool()}
	if !rh.CA.AppendCertsFromPEM([]byte(ca)) {
		return RequestHeader{}, errors.New("the request-header CA of kube-system/extension-apiserver-authentication holds no certificate")
	}
	for key, into := range map[string]*[]string{"requestheader-allowed-names": &rh.AllowedNames,
		"requestheader-username-headers": &rh.UsernameHeaders, "requestheader-group-headers": &rh.GroupHeaders} {
		if v := cm.Data[key]; v != "" {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				return RequestHeader{}, errors.Wrapf(err, "cannot read %s of kube-system/extension-apiserver-authentication", key)
			}
		}
	}
	return rh, nil
}

// Delegated wraps the API for the aggregation layer: a request must come from the front proxy, as the
// request-header settings header returns at the time say (401 otherwise), and the user it names must be
// allowed the verb on what it asks by the cluster's own authorizer, asked with a SubjectAccessReview (403
// otherwise), so the gateway's API obeys the cluster's RBAC as a built-in one does.
func Delegated(next http.Handler, header func() RequestHeader, reviews client.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, groups, err := header().authenticate(r)
		if err != nil {
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, err.Error())
			return
		}
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups}}
		attrs, verb := attributesOf(r)
		if attrs == nil {
			review.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
		} else {
			review.Spec.ResourceAttributes = attrs
		}
		if err := reviews.Create(r.Context(), review); err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, errors.Wrap(err, "cannot ask the cluster's authorizer").Error())
			return
		}
		if !review.Status.Allowed {
			what := r.URL.Path
			if attrs != nil {
				what = fmt.Sprintf("resource %q in API group %q", attrs.Resource, attrs.Group)
				if attrs.Namespace != "" {
					what += fmt.Sprintf(" in the namespace %q", attrs.Namespace)
				}
			}
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf("user %q cannot %s %s", user, verb, what))
			return
		}
		next.ServeHTTP(w, r.WithContext(withClient(r.Context(), user)))
	})
}

// authenticate checks the front proxy's client certificate and returns the user and groups it names.
func (rh RequestHeader) authenticate(r *http.Request) (string, []string, error) {
	if rh.CA == nil {
		// Verify would fall back to the system's roots.
		return "", nil, errors.New("the front proxy's CA is not read yet")
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return "", nil, errors.New("no client certificate: the gateway's API is reached through kube-apiserver")
	}
	inter := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	leaf := r.TLS.PeerCertificates[0]
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: rh.CA, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return "", nil, errors.Wrap(err, "the client certificate is not the front proxy's")
	}
	if len(rh.AllowedNames) > 0 && !slices.Contains(rh.AllowedNames, leaf.Subject.CommonName) {
		return "", nil, errors.Errorf("the client certificate's common name %q is not an allowed front proxy", leaf.Subject.CommonName)
	}
	var user string
	for _, h := range rh.UsernameHeaders {
		if user = r.Header.Get(h); user != "" {
			break
		}
	}
	if user == "" {
		return "", nil, errors.New("the front proxy named no user")
	}
	var groups []string
	for _, h := range rh.GroupHeaders {
		groups = append(groups, r.Header.Values(h)...)
	}
	// As every Kubernetes API server does for an authenticated user: the aggregation layer's own discovery
	// requests name the user alone, and discovery is granted to system:authenticated.
	if !slices.Contains(groups, "system:authenticated") {
		groups = append(groups, "system:authenticated")
	}
	return user, groups, nil
}

// attributesOf is what a request asks of which resource, nil for discovery; and its verb.
func attributesOf(r *http.Request) (*authorizationv1.ResourceAttributes, string) {
	res, namespace, name, ok := route(r.URL.Path)
	if !ok {
		return nil, strings.ToLower(r.Method)
	}
	verb := "list"
	switch q := r.URL.Query(); {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		verb = "watch"
	case name != "":
		verb = "get"
	}
	return &authorizationv1.ResourceAttributes{Verb: verb, Group: gatewayv1.GroupVersion.Group, Version: gatewayv1.GroupVersion.Version,
		Resource: res.name, Namespace: namespace, Name: name}, verb
}
