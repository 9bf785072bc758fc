package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayv1 "github.com/gpustack/gpustack-operator/apis/gateway/v1"
)

// +kubebuilder:rbac:groups="",namespace=gpustack-system,resources=secrets,verbs=get;update,resourceNames=gpustack-operator-worker-gateway-answers

// Answers keep each member's last answer in one Secret of the gateway's namespace (gatewayv1.AnswersSecretName,
// a key per member, its state as gzipped JSON), so a gateway that starts while a member does not answer serves
// what the member last answered, with its age, as the replica before it did: a restart never looks like the
// member left. A Secret, not a ConfigMap: an Instance's spec may hold what only its namespace should read.
type Answers struct {
	// Client reads and writes the Secret.
	Client client.Client
	// Namespace is the gateway's namespace.
	Namespace string
	// MaxBytes bounds what the Secret holds (DefaultAnswersMaxBytes when zero): the members that do not fit
	// are left out, and said so.
	MaxBytes int

	// saved is each member's generation and age, as last kept, and left the members that did not fit.
	saved map[string]savedAnswer
	left  []string
}

type savedAnswer struct {
	generation int64
	lastSeen   time.Time
}

// DefaultAnswersMaxBytes keeps the Secret under the API server's limit of 1 MiB an object, with room for its
// metadata.
const DefaultAnswersMaxBytes = 900 << 10

// answersRefresh is how far behind a member's stored age may fall before it is written again though nothing it
// serves changed: the age a restarted gateway shows is at most this much older than the truth.
const answersRefresh = time.Minute

// Load returns the members' last answers as kept, each not reachable (nothing has read it since) and with the
// age it had. None kept (the Secret not made yet) is no error; a member's answer that cannot be read is left out.
func (a *Answers) Load(ctx context.Context) (map[string]MemberState, error) {
	s := &corev1.Secret{}
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: gatewayv1.AnswersSecretName}, s); err != nil {
		return nil, errors.Wrapf(client.IgnoreNotFound(err), "cannot get Secret %s/%s", a.Namespace, gatewayv1.AnswersSecretName)
	}
	out := map[string]MemberState{}
	for name, data := range s.Data {
		st, err := decodeAnswer(data)
		if err != nil || st.Name != name {
			continue
		}
		st.Reachable, st.Message, st.Generation = false, "not read yet since the gateway started", 0
		out[name] = st
	}
	return out, nil
}

// Save keeps the answers of the members that answered at least once, where what they serve changed or their
// stored age fell behind by answersRefresh; a member no longer among states is dropped. Nothing is read when every
// answer is as last kept, and nothing is written when nothing changed. Members that do not fit under MaxBytes are
// left out and returned in the error.
func (a *Answers) Save(ctx context.Context, states []MemberState) error {
	answered := slices.DeleteFunc(slices.Clone(states), func(st MemberState) bool { return st.LastSeen.IsZero() })
	if len(answered) == len(a.saved) && !slices.ContainsFunc(answered, func(st MemberState) bool { return !a.current(st) }) {
		return leftOut(a.left, a.maxBytes())
	}
	s := &corev1.Secret{}
	err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: gatewayv1.AnswersSecretName}, s)
	if apierrors.IsNotFound(err) {
		s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: gatewayv1.AnswersSecretName}}
	} else if err != nil {
		return errors.Wrapf(err, "cannot get Secret %s/%s", a.Namespace, gatewayv1.AnswersSecretName)
	}
	data, saved := map[string][]byte{}, map[string]savedAnswer{}
	for _, st := range answered {
		if old, kept := s.Data[st.Name]; kept && a.current(st) {
			data[st.Name], saved[st.Name] = old, a.saved[st.Name]
			continue
		}
		saved[st.Name] = savedAnswer{generation: st.Generation, lastSeen: st.LastSeen}
		enc, err := encodeAnswer(st)
		if err != nil {
			return errors.Wrapf(err, "cannot encode the answer of member %s", st.Name)
		}
		data[st.Name] = enc
	}
	data, left := fitAnswers(data, a.maxBytes())
	if !maps.EqualFunc(data, s.Data, bytes.Equal) {
		s.Data = data
		if s.ResourceVersion == "" {
			err = a.Client.Create(ctx, s)
		} else {
			err = a.Client.Update(ctx, s)
		}
		if err != nil {
			return errors.Wrapf(err, "cannot write Secret %s/%s", a.Namespace, gatewayv1.AnswersSecretName)
		}
	}
	// Recorded for every member, those left out too: one that did not fit is tried again once it changes.
	a.saved, a.left = saved, left
	return leftOut(left, a.maxBytes())
}

// current reports whether a member's answer is as last kept: what it serves unchanged, its age behind by less
// than answersRefresh.
func (a *Answers) current(st MemberState) bool {
	prev, ok := a.saved[st.Name]
	return ok && prev.generation == st.Generation && st.LastSeen.Sub(prev.lastSeen) < answersRefresh
}

func (a *Answers) maxBytes() int {
	if a.MaxBytes > 0 {
		return a.MaxBytes
	}
	return DefaultAnswersMaxBytes
}

// fitAnswers keeps the answers, smallest first, while their sum stays under limit, and returns the names of
// those left out, sorted.
func fitAnswers(data map[string][]byte, limit int) (map[string][]byte, []string) {
	names := slices.Sorted(maps.Keys(data))
	sort.SliceStable(names, func(i, j int) bool { return len(data[names[i]]) < len(data[names[j]]) })
	out, total := map[string][]byte{}, 0
	var left []string
	for _, n := range names {
		if total+len(n)+len(data[n]) > limit {
			left = append(left, n)
			continue
		}
		out[n], total = data[n], total+len(n)+len(data[n])
	}
	slices.Sort(left)
	return out, left
}

// leftOut says which members' answers did not fit under limit.
func leftOut(names []string, limit int) error {
	if len(names) == 0 {
		return nil
	}
	return errors.Errorf("the last answers of members %s are not kept: Secret %s holds at most %d bytes", strings.Join(names, ", "),
		gatewayv1.AnswersSecretName, limit)
}

func encodeAnswer(st MemberState) ([]byte, error) {
	st.Reachable, st.Message, st.Generation = false, "", 0
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(st); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeAnswer(data []byte) (MemberState, error) {
	var st MemberState
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return st, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(raw, &st)
}
