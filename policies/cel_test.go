package policies_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// paramNames maps each policy to the Setting its binding's paramRef names.
var paramNames = map[string]string{}

// celPolicy is one ValidatingAdmissionPolicy compiled with the API server's own libraries, as the
// validating-admission-policy plugin compiles it.
type celPolicy struct {
	policy    *admissionv1.ValidatingAdmissionPolicy
	validator validating.Validator
}

// loadCELPolicies reads and compiles every policy in cel/.
func loadCELPolicies(t testing.TB) []celPolicy {
	t.Helper()
	files, err := filepath.Glob("cel/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CEL policies: %v", err)
	}
	var out []celPolicy
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			if strings.Contains(doc, "kind: ValidatingAdmissionPolicyBinding\n") {
				b := &admissionv1.ValidatingAdmissionPolicyBinding{}
				if err := yaml.UnmarshalStrict([]byte(doc), b); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if b.Spec.ParamRef != nil {
					paramNames[b.Spec.PolicyName] = b.Spec.ParamRef.Name
				}
				continue
			}
			if !strings.Contains(doc, "kind: ValidatingAdmissionPolicy\n") {
				continue
			}
			p := &admissionv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, celPolicy{policy: p, validator: compile(t, p)})
		}
	}
	return out
}

// compile mirrors compilePolicy of k8s.io/apiserver's validating plugin, and fails on any compile error.
func compile(t testing.TB, p *admissionv1.ValidatingAdmissionPolicy) validating.Validator {
	t.Helper()
	hasParams := p.Spec.ParamKind != nil
	vars := cel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	msgVars := cel.OptionalVariableDeclarations{HasParams: hasParams}
	c, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	variables := make([]cel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	c.CompileAndStoreVariables(variables, vars, environment.StoredExpressions)
	validations := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		conds := make([]cel.ExpressionAccessor, len(p.Spec.MatchConditions))
		for i := range p.Spec.MatchConditions {
			conds[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(c.CompileCondition(conds, vars, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	return validating.NewValidator(c.CompileCondition(validations, vars, environment.StoredExpressions), matcher,
		c.CompileCondition(nil, vars, environment.StoredExpressions),
		c.CompileCondition(messages, msgVars, environment.StoredExpressions), p.Spec.FailurePolicy, nil)
}

// matches reports whether the policy's match constraints select the object: its resource and, for Pods, the
// queue-name label.
func (p celPolicy) matches(kind string, obj *unstructured.Unstructured) bool {
	mc := p.policy.Spec.MatchConstraints
	if mc == nil {
		return false
	}
	resource := strings.ToLower(kind) + "s"
	found := false
	for _, r := range mc.ResourceRules {
		for _, res := range r.Resources {
			found = found || res == resource
		}
	}
	if !found {
		return false
	}
	if sel := mc.ObjectSelector; sel != nil {
		for _, e := range sel.MatchExpressions {
			if _, ok := obj.GetLabels()[e.Key]; e.Operator == "Exists" && !ok {
				return false
			}
		}
	}
	return true
}

// evalCEL runs one admission request through every policy that matches it and returns the denial messages,
// sorted; an evaluation error fails the test, since every policy fails closed.
func evalCEL(t testing.TB, policies []celPolicy, c policyCase) []string {
	t.Helper()
	obj, old := c.Objects()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if c.Kind == "Instance" {
		gvk = schema.GroupVersionKind{Group: "worker.gpustack.ai", Version: "v1", Kind: "Instance"}
		gvr = schema.GroupVersionResource{Group: "worker.gpustack.ai", Version: "v1", Resource: "instances"}
	}
	op := admission.Create
	var oldObj *unstructured.Unstructured
	if old != nil {
		op, oldObj = admission.Update, old
	}
	userInfo := &user.DefaultInfo{Name: c.UserOrDefault()}
	var attrs admission.Attributes
	if oldObj != nil {
		attrs = admission.NewAttributesRecord(obj, oldObj, gvk, c.NamespaceOrDefault(), obj.GetName(), gvr, "", op, nil, false, userInfo)
	} else {
		attrs = admission.NewAttributesRecord(obj, nil, gvk, c.NamespaceOrDefault(), obj.GetName(), gvr, "", op, nil, false, userInfo)
	}
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: obj}
	if oldObj != nil {
		versioned.VersionedOldObject = oldObj
	}
	ns := &corev1.Namespace{}
	ns.Name = c.NamespaceOrDefault()
	var messages []string
	for _, p := range policies {
		if !p.matches(c.Kind, obj) {
			continue
		}
		var params *unstructured.Unstructured
		if p.policy.Spec.ParamKind != nil {
			params = setting(c, p.policy)
		}
		var res validating.ValidateResult
		if params != nil {
			res = p.validator.Validate(context.Background(), gvr, versioned, params, ns, 10_000_000, nil)
		} else {
			res = p.validator.Validate(context.Background(), gvr, versioned, nil, ns, 10_000_000, nil)
		}
		for _, d := range res.Decisions {
			switch {
			case d.Evaluation == validating.EvalError:
				t.Fatalf("policy %s failed to evaluate: %s", p.policy.Name, d.Message)
			case d.Action == validating.ActionDeny:
				messages = append(messages, d.Message)
			}
		}
	}
	sort.Strings(messages)
	return messages
}
