package instance

import (
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransient(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	cases := map[string]struct {
		reason string
		err    error
		want   bool
	}{
		"WebhookUnreachable": {reason: "A webhook the API server could not call is an internal error, which passes.",
			err: apierrors.NewInternalError(errors.New(`failed calling webhook "pods.worker.gpustack.ai": no endpoints available`)), want: true},
		"Unavailable": {reason: "An unavailable API server passes.", err: apierrors.NewServiceUnavailable("down"), want: true},
		"Throttled":   {reason: "Throttling passes.", err: apierrors.NewTooManyRequests("slow down", 1), want: true},
		"Refused": {reason: "A policy's refusal is the user's to read, not retried.",
			err: apierrors.NewForbidden(pods, "p", errors.New("privileged is not allowed")), want: false},
		"Invalid": {reason: "An invalid Pod is not retried.", err: apierrors.NewBadRequest("bad"), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := transient(tc.err); got != tc.want {
				t.Errorf("%s\ntransient(%v) = %v, want %v", tc.reason, tc.err, got, tc.want)
			}
		})
	}
}
