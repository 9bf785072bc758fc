package localcluster

import (
	"context"
	"strconv"

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
	"github.com/gpustack/gpustack-operator/test/framework/realnode"
)

// The chart values of the clusters of a worker-gateway. A member installs the ClusterRole its reader is bound
// to. The manager runs the gateway; its own nodes stay out of every pool (node-management-manual), since its
// InstanceTypes are the members' it mirrors for dispatch, whose names its own nodes' pools would take.
var (
	MemberChartValues  = []string{"workerGateway.memberRole=true"}
	ManagerChartValues = []string{"workerGateway.enabled=true"}
	ManagerSettings    = map[string]string{workerv1.SettingNodeManagementManual: "true"}
)

// gatewayMemberReader is the account a worker-gateway reads a member as.
const gatewayMemberReader = "gpustack-worker-gateway-reader"

// AddMember registers member with this cluster's worker-gateway under name, as an administrator adds a member:
// an account in the member bound to the ClusterRole its chart installed (MemberChartValues), and a Secret here
// holding a kubeconfig of that account, whose server is the member's API server as this cluster's Pods reach
// it (the machine's address on the nodes' bridge).
func (c *Cluster) AddMember(ctx context.Context, name string, member *Cluster) error {
	mcs, err := kubernetes.NewForConfig(member.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create the member's client")
	}
	role, err := rbac.GatewayMember()
	if err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: workerv1.SystemNamespace, Name: gatewayMemberReader}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: gatewayMemberReader}}
	if _, err := mcs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot bind the worker-gateway's reader in the member")
	}
	if _, err := mcs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return errors.Wrap(err, "cannot create the worker-gateway's reader in the member")
	}
	token, err := mcs.CoreV1().ServiceAccounts(workerv1.SystemNamespace).CreateToken(ctx, gatewayMemberReader, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](30 * 24 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot request the reader's token in the member")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + realnode.HostIP + ":" + strconv.Itoa(member.ports.apiServer),
		CertificateAuthorityData: member.RESTConfig.CAData}
	kc.AuthInfos[gatewayMemberReader] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: gatewayMemberReader}
	kc.CurrentContext = name
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return errors.Wrap(err, "cannot write the member's kubeconfig")
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayv1.MembersNamespace, Name: name,
		Labels: map[string]string{gatewayv1.LabelMember: "true"}}, Data: map[string][]byte{gatewayv1.KubeconfigKey: data}}
	if _, err := cs.CoreV1().Secrets(secret.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return errors.Wrapf(err, "cannot create the member Secret %s", name)
	}
	return nil
}
