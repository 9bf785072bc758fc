package gateway_test

import (
	"context"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/apis/scheme"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
	"github.com/gpustack/gpustack-operator/internal/gateway"
)

// A member Secret whose kubeconfig runs a command for its credentials: the gateway refuses it with the reason on
// the member's state, never runs the command, and makes no connection to the server it names.
var _ = It("refuses a member kubeconfig that runs a command, and sends it nothing", func() {
	ctx, cancel := context.WithCancel(context.Background())
	DeferCleanup(cancel)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(lis.Close)
	var connections atomic.Int32
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			connections.Add(1)
			_ = c.Close()
		}
	}()
	marker := filepath.Join(GinkgoT().TempDir(), "ran")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["m"] = &clientcmdapi.Cluster{Server: "https://" + lis.Addr().String()}
	kc.AuthInfos["m"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
		Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}}
	kc.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	kc.CurrentContext = "m"
	data, err := clientcmd.Write(*kc)
	Expect(err).NotTo(HaveOccurred())
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: workerv1.SystemNamespace, Name: "member-exec",
		Labels: map[string]string{gatewayv1.LabelMember: "true"}}, Data: map[string][]byte{gatewayv1.KubeconfigKey: data}}
	Expect(suite.Client.Create(ctx, s)).To(Succeed())
	DeferCleanup(func() { _ = suite.Client.Delete(context.Background(), s) })

	gw := &gateway.Gateway{Client: suite.Client, Namespace: workerv1.SystemNamespace, Scheme: scheme.New(),
		Interval: 100 * time.Millisecond, Timeout: time.Second, Log: logr.Discard()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gw.Run(ctx)
	}()
	DeferCleanup(func() { cancel(); <-done })
	state := func() gateway.MemberState {
		states, _ := gw.States()
		for _, st := range states {
			if st.Name == s.Name {
				return st
			}
		}
		return gateway.MemberState{}
	}
	Eventually(func() string { return state().Message }).WithTimeout(10 * time.Second).Should(Equal(
		"the kubeconfig of member member-exec (Secret gpustack-system/member-exec, key kubeconfig) is refused: " +
			`user "m": exec is not allowed: the gateway runs no command a Secret names`))
	// Some intervals more, in which a member accepted would have been read several times.
	Consistently(func() int32 { return connections.Load() }).WithTimeout(time.Second).Should(BeZero(), "connections to the refused member's server")
	Expect(state().Reachable).To(BeFalse())
	Expect(marker).NotTo(BeAnExistingFile(), "the exec command ran")
})
