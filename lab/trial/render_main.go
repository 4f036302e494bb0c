// Copied by mo-chaos's image trial (lab/trial) into a temporary copy of a
// matrixone-operator checkout, as cmd/mochaos-render/main.go. Not part of the operator.
//
// It reads a LogSet, a DNSet and a CNPool (YAML documents on stdin), admits each through
// the operator's own webhooks, and runs the operator's own controllers on them against an
// in-memory client, as they would run on a cluster the first time they see them: the
// LogSet's Create then Observe (which sets its discovery address), the DNSet's Create, the
// pool's Sync (which creates its CNSet) and the CNSet's Create. It prints every object they
// created (ConfigMaps, Services, StatefulSets, CloneSets) as one JSON list on stdout.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/go-logr/logr"
	"github.com/matrixorigin/controller-runtime/pkg/fake"
	recon "github.com/matrixorigin/controller-runtime/pkg/reconciler"
	"github.com/matrixorigin/matrixone-operator/api/core/v1alpha1"
	"github.com/matrixorigin/matrixone-operator/pkg/controllers/cnpool"
	"github.com/matrixorigin/matrixone-operator/pkg/controllers/cnset"
	"github.com/matrixorigin/matrixone-operator/pkg/controllers/dnset"
	"github.com/matrixorigin/matrixone-operator/pkg/controllers/logset"
	"github.com/matrixorigin/matrixone-operator/pkg/webhook"
	kruisev1alpha1 "github.com/openkruise/kruise-api/apps/v1alpha1"
	kruisev1 "github.com/openkruise/kruise-api/apps/v1beta1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mochaos-render:", err)
		os.Exit(1)
	}
}

func newContext[T client.Object](obj T, cli client.Client) *recon.Context[T] {
	return &recon.Context[T]{
		Context: context.Background(),
		Obj:     obj,
		Client:  cli,
		Log:     logr.Discard(),
		Event:   &recon.EmitEventWrapper{EventRecorder: record.NewFakeRecorder(1000)},
	}
}

func run(in io.Reader, out io.Writer) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(kruisev1.AddToScheme(scheme))
	utilruntime.Must(kruisev1alpha1.AddToScheme(scheme))
	cli := &fake.Client{Client: fake.KubeClientBuilder().WithScheme(scheme).Build()}

	ls, dn, pool := &v1alpha1.LogSet{}, &v1alpha1.DNSet{}, &v1alpha1.CNPool{}
	if err := decode(in, map[string]any{"LogSet": ls, "DNSet": dn, "CNPool": pool}); err != nil {
		return err
	}
	admit := admission.NewContextWithRequest(context.Background(), admission.Request{
		AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create},
	})
	for _, obj := range []client.Object{ls, dn} {
		if err := webhook.MochaosAdmit(admit, cli, obj); err != nil {
			return fmt.Errorf("webhook refused %s: %w", obj.GetName(), err)
		}
	}
	for _, obj := range []client.Object{ls, dn, pool} {
		if err := cli.Create(context.Background(), obj); err != nil {
			return err
		}
	}

	lctx := newContext(ls, cli)
	if err := (&logset.Actor{}).Create(lctx); err != nil {
		return fmt.Errorf("logset create: %w", err)
	}
	// Observe sets status.discovery first; what it does after that needs running pods.
	_, _ = (&logset.Actor{}).Observe(lctx)
	if ls.Status.Discovery == nil {
		return fmt.Errorf("logset observe set no discovery address")
	}

	dctx := newContext(dn, cli)
	dctx.Dep = dn.DeepCopy()
	dctx.Dep.Deps.LogSet = ls
	if err := (&dnset.Actor{}).Create(dctx); err != nil {
		return fmt.Errorf("dnset create: %w", err)
	}

	if err := (&cnpool.Actor{}).Sync(newContext(pool, cli)); err != nil {
		return fmt.Errorf("cnpool sync: %w", err)
	}
	sets := &v1alpha1.CNSetList{}
	if err := cli.List(context.Background(), sets, client.InNamespace(pool.Namespace)); err != nil {
		return err
	}
	if len(sets.Items) != 1 {
		return fmt.Errorf("cnpool sync made %d CNSets, want 1", len(sets.Items))
	}
	cs := &sets.Items[0]
	if err := webhook.MochaosAdmit(admit, cli, cs); err != nil {
		return fmt.Errorf("webhook refused CNSet %s: %w", cs.Name, err)
	}
	cctx := newContext(cs, cli)
	cctx.Dep = cs.DeepCopy()
	cctx.Dep.Deps.LogSet = ls
	cctx.Dep.Deps.DNSet = dn
	if err := (&cnset.Actor{}).Create(cctx); err != nil {
		return fmt.Errorf("cnset create: %w", err)
	}
	return dump(cli, ls.Namespace, out)
}

func decode(in io.Reader, into map[string]any) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		target, ok := into[meta.Kind]
		if !ok {
			continue
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			return fmt.Errorf("%s: %w", meta.Kind, err)
		}
		delete(into, meta.Kind)
	}
	for kind := range into {
		return fmt.Errorf("no %s in the input", kind)
	}
	return nil
}

func dump(cli client.Client, namespace string, out io.Writer) error {
	lists := []client.ObjectList{
		&corev1.ConfigMapList{}, &corev1.ServiceList{},
		&kruisev1.StatefulSetList{}, &kruisev1alpha1.CloneSetList{},
	}
	kinds := []string{"ConfigMap", "Service", "StatefulSet", "CloneSet"}
	var objects []map[string]any
	for i, list := range lists {
		if err := cli.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
			return err
		}
		raw, err := json.Marshal(list)
		if err != nil {
			return err
		}
		var items struct{ Items []map[string]any }
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		for _, item := range items.Items {
			item["kind"] = kinds[i]
			objects = append(objects, item)
		}
	}
	return json.NewEncoder(out).Encode(objects)
}
