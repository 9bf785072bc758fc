package gateway

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
	workerv1 "github.com/gpustack/gpustack-operator/apis/worker/v1"
)

// +kubebuilder:rbac:groups="",namespace=gpustack-members,resources=secrets,verbs=get;list;watch

// Gateway reads the member clusters the Secrets of the members' namespace name, each on its own loop, and
// keeps what each last answered.
type Gateway struct {
	// Client reads the member Secrets (labelled gateway.gpustack.ai/member=true) on the gateway's own cluster.
	Client client.Reader
	// Namespace holds the member Secrets.
	Namespace string
	// Scheme decodes the members' objects.
	Scheme *runtime.Scheme
	// Interval is how often the Secrets are looked at and each member is read; Timeout bounds one read.
	Interval, Timeout time.Duration
	// Log reports members that come and go and reads that fail.
	Log logr.Logger
	// Answers, when set, keep each member's last answer across restarts: Run starts each member from what it
	// last answered, and KeepAnswers stores the answers.
	Answers *Answers

	mu      sync.Mutex
	members map[string]*member
	// seeds are the members' last answers as kept before this gateway started, until each member's loop starts.
	seeds map[string]MemberState
	// generation counts the changes of what is served; it is the served resourceVersion.
	generation int64
	// listed is true once the member Secrets were listed; allRead once every member then was read.
	listed, allRead bool
}

// Listed reports whether the member Secrets were listed at least once: before that, no members does not mean
// there are none.
func (g *Gateway) Listed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.listed
}

// member is one member's read loop and what it last answered.
type member struct {
	secretVersion string
	stop          context.CancelFunc
	state         MemberState
	// read is true once a read ended, answered or not, or its Secret was refused.
	read bool
}

// MembersRead is a readiness check: it passes once the member Secrets were listed and each member was read
// once (answered or not, which a read does within the read timeout), and from then on. A replica that served
// before would answer an empty list for a member it has not read yet, as if the member held nothing; one that
// is ready stays so while members come and go, so both replicas never leave the Service together.
func (g *Gateway) MembersRead(_ *http.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.allRead {
		return nil
	}
	if !g.listed {
		return errors.New("the member Secrets are not listed yet")
	}
	var unread []string
	for name, m := range g.members {
		if !m.read {
			unread = append(unread, name)
		}
	}
	if len(unread) > 0 {
		sort.Strings(unread)
		return errors.Errorf("not read yet: %s", strings.Join(unread, ", "))
	}
	g.allRead = true
	return nil
}

// Run looks at the member Secrets every Interval, starting a read loop for each new or changed one and stopping
// those whose Secret went, until ctx ends.
func (g *Gateway) Run(ctx context.Context) error {
	if g.Interval <= 0 || g.Timeout <= 0 {
		return errors.Errorf("the interval (%s) and the read timeout (%s) must be positive", g.Interval, g.Timeout)
	}
	var seeds map[string]MemberState
	if g.Answers != nil {
		var err error
		if seeds, err = g.Answers.Load(ctx); err != nil {
			g.Log.Error(err, "cannot read the members' last answers; a member that does not answer is served without them")
		}
	}
	g.mu.Lock()
	if g.members == nil {
		g.members = map[string]*member{}
	}
	g.seeds = seeds
	g.mu.Unlock()
	defer g.stopAll()
	for {
		if err := g.syncMembers(ctx); err != nil {
			g.Log.Error(err, "cannot read the member Secrets; the members stay as they are")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(g.Interval):
		}
	}
}

// States returns every member's state, sorted by name, and the generation they are at.
func (g *Gateway) States() ([]MemberState, int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]MemberState, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m.state)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, g.generation
}

func (g *Gateway) syncMembers(ctx context.Context) error {
	var secrets corev1.SecretList
	if err := g.Client.List(ctx, &secrets, client.InNamespace(g.Namespace), client.MatchingLabels{gatewayv1.LabelMember: "true"}); err != nil {
		return errors.Wrapf(err, "cannot list the member Secrets in %s", g.Namespace)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listed = true
	seen := map[string]bool{}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		seen[s.Name] = true
		if m := g.members[s.Name]; m != nil && m.secretVersion == s.ResourceVersion {
			continue
		}
		g.startMember(ctx, s)
	}
	for name, m := range g.members {
		if !seen[name] {
			g.Log.Info("member removed", "member", name)
			m.stop()
			delete(g.members, name)
			g.generation++
		}
	}
	return nil
}

// startMember (re)starts the read loop of a member Secret; g.mu is held.
func (g *Gateway) startMember(ctx context.Context, s *corev1.Secret) {
	state := MemberState{Name: s.Name, Message: "not read yet"}
	if old := g.members[s.Name]; old != nil {
		old.stop()
		// What it last answered stays until the new kubeconfig reads it: a rotated Secret does not drop its
		// types from the views or from what is dispatched.
		state = old.state
		state.Reachable, state.Message = false, "not read yet since its Secret changed"
	} else if seed, ok := g.seeds[s.Name]; ok {
		// What it answered before this gateway started stays until it answers again.
		state = seed
		delete(g.seeds, s.Name)
	}
	memberCtx, stop := context.WithCancel(ctx)
	m := &member{secretVersion: s.ResourceVersion, stop: stop, state: state}
	g.members[s.Name] = m
	g.generation++
	m.state.Generation = g.generation
	reader, err := g.readerOf(s)
	if err != nil {
		m.state.Message, m.read = err.Error(), true
		g.Log.Error(err, "member not read", "member", s.Name)
		return
	}
	g.Log.Info("member added", "member", s.Name)
	go g.readLoop(memberCtx, s.Name, m, reader)
}

// readerOf makes a client of the member from its Secret's kubeconfig, refused before any request when it holds
// more than a server, a CA and inline credentials; reads time out after Timeout.
func (g *Gateway) readerOf(s *corev1.Secret) (client.Reader, error) {
	kc, err := ParseMemberKubeconfig(s.Data[gatewayv1.KubeconfigKey])
	if err != nil {
		return nil, errors.Wrapf(err, "the kubeconfig of member %s (Secret %s/%s, key %s) is refused", s.Name, s.Namespace, s.Name, gatewayv1.KubeconfigKey)
	}
	cfg := kc.RESTConfig()
	cfg.Timeout = g.Timeout
	c, err := client.New(cfg, client.Options{Scheme: g.Scheme})
	if err != nil {
		return nil, errors.Wrapf(err, "cannot make a client of member %s", s.Name)
	}
	return c, nil
}

// readLoop reads the member now and every Interval until ctx ends.
func (g *Gateway) readLoop(ctx context.Context, name string, m *member, reader client.Reader) {
	for {
		next := g.read(ctx, name, reader)
		g.mu.Lock()
		if ctx.Err() == nil {
			g.record(m, next)
			m.read = true
		}
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(g.Interval):
		}
	}
}

// read reads a member's InstanceTypes, Instances, InstancePersistentVolumes, ClusterQueues, the Workloads
// MultiKueue made there, the names of what an Instance refers to (volume types, SSH keys, pull secrets) and the
// access of the Instances dispatched there; on failure only the reachability and message are new.
func (g *Gateway) read(ctx context.Context, name string, reader client.Reader) MemberState {
	readCtx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	var types workerv1.InstanceTypeList
	var instances workerv1.InstanceList
	var volumes workerv1.InstancePersistentVolumeList
	var queues kueue.ClusterQueueList
	var dispatched kueue.WorkloadList
	err := reader.List(readCtx, &types)
	if err == nil {
		err = reader.List(readCtx, &instances)
	}
	if err == nil {
		err = reader.List(readCtx, &volumes)
	}
	// A member without Kueue serves no queues and holds no dispatched Workloads; its types are still read.
	if err == nil {
		err = ignoreNoKind(reader.List(readCtx, &queues))
	}
	if err == nil {
		err = ignoreNoKind(reader.List(readCtx, &dispatched, client.HasLabels{kueue.MultiKueueOriginLabel}))
	}
	var refs references
	var unread []string
	if err == nil {
		unread, err = refs.read(readCtx, reader)
	}
	// The Services the member's worker made for dispatched Instances, which say where each is reached.
	var exposed corev1.ServiceList
	if err == nil {
		err = optional(reader.List(readCtx, &exposed, client.HasLabels{kueue.MultiKueueOriginLabel}), "services", &unread)
	}
	if err != nil {
		return MemberState{Name: name, Message: errors.Wrapf(err, "cannot read member %s", name).Error()}
	}
	state := MemberState{Name: name, Reachable: true, LastSeen: time.Now(), InstanceTypes: types.Items, Instances: instances.Items,
		PersistentVolumes: volumes.Items, ClusterQueues: queues.Items, Dispatched: dispatched.Items,
		VolumeTypes: refs.volumeTypes.Items, SSHKeys: refs.sshKeys.Items, PullSecrets: refs.pullSecrets.Items,
		Access: accessOf(exposed.Items)}
	if len(unread) > 0 {
		state.Message = fmt.Sprintf("cannot read its %s (not served, or not allowed by a member role older than this gateway: "+
			"upgrade the member's chart), so the manager goes without them", strings.Join(unread, ", "))
	}
	return state
}

// references are what an Instance names besides its type and volumes: a member's volume types, SSH keys and
// pull secrets. The keys are dropped as they are read and the pull secrets read as metadata, so the gateway
// never holds a member's credentials.
type references struct {
	volumeTypes workerv1.InstancePersistentVolumeTypeList
	sshKeys     workerv1.InstanceSSHPublicKeyList
	pullSecrets metav1.PartialObjectMetadataList
}

// read lists the references; a kind the member does not serve, or does not let the gateway list (its member
// role is older than these reads), is left empty and returned by name, and the rest of the member still counts.
func (r *references) read(ctx context.Context, reader client.Reader) ([]string, error) {
	r.pullSecrets.SetGroupVersionKind(workerv1.GroupVersion.WithKind("InstanceImagePullSecretList"))
	var unread []string
	for _, l := range []struct {
		resource string
		list     client.ObjectList
	}{{"instancepersistentvolumetypes", &r.volumeTypes}, {"instancesshpublickeys", &r.sshKeys}, {"instanceimagepullsecrets", &r.pullSecrets}} {
		if err := optional(reader.List(ctx, l.list), l.resource, &unread); err != nil {
			return nil, err
		}
	}
	for i := range r.sshKeys.Items {
		r.sshKeys.Items[i].Spec = workerv1.InstanceSSHPublicKeySpec{}
	}
	return unread, nil
}

// optional returns a list's error, but for one saying the member does not serve the resource or does not let
// the gateway list it (its member role is older than this read), which adds the resource to unread instead: the
// rest of the member still counts.
func optional(err error, resource string, unread *[]string) error {
	if apimeta.IsNoMatchError(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		*unread = append(*unread, resource)
		return nil
	}
	return err
}

// accessOf is the access note of each Service, by namespace/name.
func accessOf(services []corev1.Service) map[string]string {
	out := map[string]string{}
	for i := range services {
		if a := services[i].Annotations[workerv1.AnnotationInstanceAccess]; a != "" {
			out[services[i].Namespace+"/"+services[i].Name] = a
		}
	}
	return out
}

// record keeps a read's outcome; a failed read keeps what the member last answered. The generation moves only
// when something served changed (not LastSeen, the queues or the dispatched Workloads alone, which only the
// dispatcher reads), so watchers hear of changes, not of every read; g.mu is held.
func (g *Gateway) record(m *member, next MemberState) {
	if !next.Reachable {
		if m.state.Reachable {
			g.Log.Info("member unreachable", "member", next.Name, "error", next.Message)
		}
		held := m.state
		held.Reachable, held.Message = false, next.Message
		next = held
	}
	prev := m.state
	m.state, m.state.Generation = next, prev.Generation
	if servedChanged(prev, next) {
		g.generation++
		m.state.Generation = g.generation
	}
}

// servedChanged reports whether what the gateway serves of a member differs between two of its states.
func servedChanged(prev, next MemberState) bool {
	eq := apiequality.Semantic.DeepEqual
	return prev.Reachable != next.Reachable || prev.Message != next.Message || !eq(prev.InstanceTypes, next.InstanceTypes) ||
		!eq(prev.Instances, next.Instances) || !eq(prev.PersistentVolumes, next.PersistentVolumes) || !eq(prev.VolumeTypes, next.VolumeTypes) ||
		!eq(prev.SSHKeys, next.SSHKeys) || !eq(prev.PullSecrets, next.PullSecrets)
}

// ignoreNoKind returns nil for an error saying the kind is not served.
func ignoreNoKind(err error) error {
	if apimeta.IsNoMatchError(err) {
		return nil
	}
	return err
}

// KeepAnswers stores the members' answers (Answers.Save) every Interval until ctx ends, once the member Secrets
// were listed: before that, no member would drop every kept answer. One replica keeps them: the caller runs it on
// the Lease's holder.
func (g *Gateway) KeepAnswers(ctx context.Context) error {
	if g.Answers == nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(g.Interval):
		}
		if !g.Listed() {
			continue
		}
		states, _ := g.States()
		if err := g.Answers.Save(ctx, states); err != nil {
			g.Log.Error(err, "cannot keep the members' last answers")
		}
	}
}

func (g *Gateway) stopAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.members {
		m.stop()
	}
}
