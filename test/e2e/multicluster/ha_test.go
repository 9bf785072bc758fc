package multicluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	"github.com/gpustack/gpustack-operator/test/framework/builders"
	"github.com/gpustack/gpustack-operator/test/framework/e2esuite"
	"github.com/gpustack/gpustack-operator/test/framework/localcluster"
	"github.com/gpustack/gpustack-operator/test/framework/testenv"
)

// gatewayPods names the manager's worker-gateway Pods that are Ready and not being deleted.
func gatewayPods() []string {
	GinkgoHelper()
	out, err := testenv.Kubectl(manager.Kubeconfig, "-n", localcluster.ChartNamespace, "get", "pods", "-l", "app.kubernetes.io/component=worker-gateway",
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	Expect(err).NotTo(HaveOccurred(), out)
	var ready []string
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "True" {
			ready = append(ready, f[0])
		}
	}
	return ready
}

// The worker-gateway runs two replicas behind the chart's APIService. Each deleted in turn, the other answers
// kubectl get aggregatedinstancetypes throughout; a namespace deleted meanwhile goes (the namespace controller
// asks every aggregated API, the gateway's too); an Instance dispatched before runs on, unstopped, in the same Pod
// of its member; and a replica of the new ones holds the dispatcher's Lease.
var _ = It("answers through the deletion of each of its replicas in turn, and stops no dispatched Instance", func() {
	waitAggregated(bothAnswer)
	ctx, k := context.Background(), managerClient
	inst := builders.MakeInstance("default", "kept-through-gateway", cpuType).CPU("10").Obj()
	Eventually(func() error { return k.Create(ctx, inst) }, 30*time.Second, time.Second).Should(Succeed())
	DeferCleanup(func() { _ = k.Delete(context.Background(), inst) })
	var member string
	e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
		s := strings.SplitN(instanceState(inst.Name), "/", 3)
		member = s[min(1, len(s)-1)]
		return s[0] == "Ready" && members[member] != nil, "the manager's Instance (phase/cluster/message): " + strings.Join(s, "/")
	})
	uid := members[member].Kubectl("-n", "default", "get", "pod", inst.Name, "-o", "jsonpath={.metadata.uid}")

	before := gatewayPods()
	Expect(before).To(HaveLen(2), "the gateway's Ready replicas")
	var mu sync.Mutex
	var answers int
	var failures []string
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			out, err := testenv.Kubectl(manager.Kubeconfig, "get", "aggregatedinstancetypes", "-o", "name")
			mu.Lock()
			answers++
			if err != nil || !strings.Contains(out, cpuType) {
				failures = append(failures, fmt.Sprintf("%s: %v %s", time.Now().Format(time.TimeOnly), err, out))
			}
			mu.Unlock()
		}
	}()
	for i, pod := range before {
		By("deleting the gateway's Pod " + pod)
		out, err := testenv.Kubectl(manager.Kubeconfig, "-n", localcluster.ChartNamespace, "delete", "pod", pod, "--wait=false")
		Expect(err).NotTo(HaveOccurred(), out)
		if i == 0 {
			namespace := "gateway-ha"
			for _, args := range [][]string{{"create", "namespace", namespace}, {"delete", "namespace", namespace, "--wait=false"}} {
				out, err := testenv.Kubectl(manager.Kubeconfig, args...)
				Expect(err).NotTo(HaveOccurred(), out)
			}
			e2esuite.WaitFor(time.Minute, func() (bool, string) {
				out, err := testenv.Kubectl(manager.Kubeconfig, "get", "namespace", namespace, "-o", "jsonpath={.status.conditions}")
				return err != nil && strings.Contains(err.Error(), "NotFound"), "the namespace deleted while a gateway replica stops: " + out
			})
		}
		e2esuite.WaitFor(3*time.Minute, func() (bool, string) {
			now := gatewayPods()
			return len(now) == 2 && !slices.Contains(now, pod), fmt.Sprintf("the gateway's Ready replicas: %v", now)
		})
	}
	close(stop)
	<-done
	Expect(failures).To(BeEmpty(), "kubectl get aggregatedinstancetypes failed %d of %d times", len(failures), answers)
	GinkgoWriter.Printf("kubectl get aggregatedinstancetypes answered %d times through the deletions\n", answers)

	By("the dispatched Instance running on, and a new replica leading the dispatch")
	after := gatewayPods()
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		holder, _ := testenv.Kubectl(manager.Kubeconfig, "-n", localcluster.ChartNamespace, "get", "lease", "gpustack-operator-worker-gateway",
			"-o", "jsonpath={.spec.holderIdentity}")
		for _, pod := range after {
			if strings.HasPrefix(holder, pod+"_") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("the dispatcher's Lease is held by %q, not by one of the replicas %v", holder, after)
	})
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		s := instanceState(inst.Name)
		pod, _ := testenv.Kubectl(members[member].Cluster.Kubeconfig, "-n", "default", "get", "pod", inst.Name, "-o", "jsonpath={.metadata.uid} {.status.phase}")
		return strings.HasPrefix(s, "Ready/"+member+"/") && pod == uid+" Running",
			"the manager's Instance (phase/cluster/message): " + s + "; its Pod on " + member + " (uid phase): " + pod + ", was " + uid
	})
	notStopped("the gateway's replicas deleted in turn", client.ObjectKeyFromObject(inst))
})

// answersRepeatedly waits until kubectl get aggregatedinstancetypes on the manager answers ten times in a row
// (so through each replica, which the aggregation layer picks at random), within timeout.
func answersRepeatedly(after string, timeout time.Duration) {
	GinkgoHelper()
	inRow := 0
	e2esuite.WaitFor(timeout, func() (bool, string) {
		out, err := testenv.Kubectl(manager.Kubeconfig, "get", "aggregatedinstancetypes", "-o", "name")
		if err != nil || !strings.Contains(out, cpuType) {
			inRow = 0
			return false, fmt.Sprintf("%s: kubectl get aggregatedinstancetypes: %v %s", after, err, out)
		}
		inRow++
		return inRow == 10, fmt.Sprintf("%s: %d answers in a row", after, inRow)
	})
}

// What the gateway serves the aggregation layer with is read again while it runs: its serving certificate made
// again (its Secret deleted: a replica signs a new one, and writes its CA into the APIService) and the front
// proxy's CA rotated in kube-apiserver are each answered again within a minute, with no replica restarted.
var _ = It("serves on through its serving certificate and the front proxy's CA rotated, without a restart", func() {
	waitAggregated(bothAnswer)
	answersRepeatedly("before the rotations", time.Minute)
	replicas, restarts := gatewayPods(), gatewayRestarts()
	caBundle := func() string {
		out, err := testenv.Kubectl(manager.Kubeconfig, "get", "apiservice", gatewayv1.APIServiceName, "-o", "jsonpath={.spec.caBundle}")
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	before := caBundle()

	By("the serving certificate's Secret deleted")
	out, err := testenv.Kubectl(manager.Kubeconfig, "-n", localcluster.ChartNamespace, "delete", "secret", gatewayv1.ServingSecretName)
	Expect(err).NotTo(HaveOccurred(), out)
	e2esuite.WaitFor(time.Minute, func() (bool, string) {
		now := caBundle()
		return now != "" && now != before, "the APIService's caBundle is the old certificate's"
	})
	answersRepeatedly("the serving certificate made again", time.Minute)

	By("the front proxy's CA rotated")
	authentication := func() string {
		out, err := testenv.Kubectl(manager.Kubeconfig, "-n", "kube-system", "get", "configmap", "extension-apiserver-authentication",
			"-o", `jsonpath={.data.requestheader-client-ca-file}`)
		Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	published := authentication()
	Expect(manager.RotateFrontProxyCA()).To(Succeed())
	// kube-apiserver looks at the files again within a minute.
	e2esuite.WaitFor(2*time.Minute, func() (bool, string) {
		return authentication() != published, "kube-apiserver has not published the new front-proxy CA yet"
	})
	answersRepeatedly("the front proxy's CA rotated", time.Minute)
	Expect(gatewayPods()).To(ConsistOf(replicas), "the gateway's replicas: none replaced")
	Expect(gatewayRestarts()).To(Equal(restarts), "the gateway's containers' restarts")
})

// gatewayRestarts is the restart count of each of the manager's worker-gateway containers.
func gatewayRestarts() string {
	GinkgoHelper()
	out, err := testenv.Kubectl(manager.Kubeconfig, "-n", localcluster.ChartNamespace, "get", "pods", "-l", "app.kubernetes.io/component=worker-gateway",
		"-o", "jsonpath={range .items[*]}{.metadata.name}={.status.containerStatuses[*].restartCount} {end}")
	Expect(err).NotTo(HaveOccurred(), out)
	return out
}
