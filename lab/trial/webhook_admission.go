// Copied by mo-chaos's image trial (lab/trial) into a temporary copy of a
// matrixone-operator checkout, as pkg/webhook/zz_mochaos_admission.go: it lets the trial's
// renderer admit a LogSet, DNSet or CNSet through the operator's own defaulting and
// validating webhooks, as the apiserver does on create. Not part of the operator.

package webhook

import (
	"context"
	"fmt"

	"github.com/matrixorigin/matrixone-operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MochaosAdmit defaults obj, then validates it as created.
func MochaosAdmit(ctx context.Context, cli client.Client, obj runtime.Object) error {
	var err error
	switch obj.(type) {
	case *v1alpha1.LogSet:
		if err = (&logSetDefaulter{}).Default(ctx, obj); err == nil {
			_, err = (&logSetValidator{kClient: cli}).ValidateCreate(ctx, obj)
		}
	case *v1alpha1.DNSet:
		if err = (&dnSetDefaulter{}).Default(ctx, obj); err == nil {
			_, err = (&dnSetValidator{}).ValidateCreate(ctx, obj)
		}
	case *v1alpha1.CNSet:
		if err = (&cnSetDefaulter{}).Default(ctx, obj); err == nil {
			_, err = (&cnSetValidator{}).ValidateCreate(ctx, obj)
		}
	default:
		err = fmt.Errorf("no webhook for %T", obj)
	}
	return err
}
