package localcluster

import (
	"context"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/package/rbac"
)

// gatewayService is the Service the worker-gateway's APIService names.
const gatewayService = "gpustack-operator-worker-gateway"

// startGateway runs the worker-gateway as its service account behind the aggregation layer, and waits until
// kube-apiserver serves its API. On loopback there is no Service network: a Service of type ExternalName sends
// kube-apiserver to localhost at the gateway's port, where a cluster's Service would send it to its Pods.
func (c *Cluster) startGateway(ctx context.Context) error {
	if !c.cfg.Gateway || c.cfg.Operator == "" {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	kubeconfig, err := c.serviceAccount(ctx, "worker-gateway", workerv1.SystemNamespace)
	if err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayService},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "https", Port: int32(c.ports.gateway)}}}}
	if _, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the worker-gateway's Service")
	}
	port := strconv.Itoa(c.ports.gateway)
	if err := c.start(componentGateway, nil, c.cfg.Operator, "worker-gateway", "--kubeconfig="+kubeconfig,
		"--socket="+c.path("gateway.sock"), "--secure-port="+port, "--bind-address=127.0.0.1", "--service-port="+port,
		"--interval=2s", "--read-timeout=2s"); err != nil {
		return err
	}
	return c.waitFor(ctx, "the worker-gateway's API", time.Minute, func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/apis", gatewayv1.GroupVersion.Group, gatewayv1.GroupVersion.Version).DoRaw(ctx)
		return err
	})
}

// AddMember registers member with this cluster's worker-gateway under name: an account in the member that may
// read its InstanceTypes and Instances, and a Secret here holding a kubeconfig of that account, as an
// administrator would add a member.
func (c *Cluster) AddMember(ctx context.Context, name string, member *Cluster) error {
	mcs, err := kubernetes.NewForConfig(member.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create the member's client")
	}
	const account = "gpustack-worker-gateway-reader"
	role, err := rbac.GatewayMember()
	if err != nil {
		return err
	}
	if err := ensureNamespace(ctx, mcs, workerv1.SystemNamespace); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: workerv1.SystemNamespace, Name: account}}}
	for _, create := range []func() error{
		func() error {
			_, err := mcs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := mcs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		},
		func() error {
			sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: account}}
			_, err := mcs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return errors.Wrap(err, "cannot give the worker-gateway's reader its rights in the member")
		}
	}
	token, err := mcs.CoreV1().ServiceAccounts(workerv1.SystemNamespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](30 * 24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot request the reader's token in the member")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: member.RESTConfig.Host, CertificateAuthorityData: member.RESTConfig.CAData}
	kc.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: account}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return errors.Wrap(err, "cannot write the member's kubeconfig")
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: name,
		Labels: map[string]string{gatewayv1.LabelMember: "true"}}, Data: map[string][]byte{gatewayv1.KubeconfigKey: data}}
	if _, err := cs.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return errors.Wrapf(err, "cannot create the member Secret %s", name)
	}
	return nil
}
