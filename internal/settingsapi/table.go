package settingsapi

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	settingsv1 "github.com/gpustack/gpustack-operator/apis/settings/v1"
)

// columns are kubectl get settings' columns: the value in effect and the default, and with -o wide what the
// setting does.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "the setting's name"},
	{Name: "Value", Type: "string", Description: "the value in effect, or (sensitive)"},
	{Name: "Default", Type: "string", Description: "the built-in default"},
	{Name: "Description", Type: "string", Priority: 1, Description: "what the setting does"},
}

// ConvertToTable is kubectl get's view of a Setting or a SettingList.
func (r *REST) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: columns}
	row := func(s *settingsv1.Setting) metav1.TableRow {
		return metav1.TableRow{Cells: []any{s.Name, s.Status.Value, s.Status.Default, s.Status.Description},
			Object: runtime.RawExtension{Object: s}}
	}
	switch o := obj.(type) {
	case *settingsv1.Setting:
		t.ResourceVersion = o.ResourceVersion
		t.Rows = []metav1.TableRow{row(o)}
	case *settingsv1.SettingList:
		t.ResourceVersion, t.Continue, t.RemainingItemCount = o.ResourceVersion, o.Continue, o.RemainingItemCount
		for i := range o.Items {
			t.Rows = append(t.Rows, row(&o.Items[i]))
		}
	default:
		return nil, errors.Errorf("cannot show a %T as a table of Settings", obj)
	}
	return t, nil
}
