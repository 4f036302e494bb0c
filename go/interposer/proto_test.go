package main

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func encodePod(t *testing.T, name string, labels map[string]string) []byte {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), corev1.SchemeGroupVersion)
	b, err := runtime.Encode(enc, pod)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("k8s\x00")) {
		t.Fatalf("not a protobuf envelope: %q", b[:8])
	}
	return b
}

func TestProtobufBody(t *testing.T) {
	h := newHarness(t)
	h.addRule(`{"id":"pb","action":"fail","status":409,"match":{"verbs":["create"],"resource":"pods","fields":[{"path":"metadata.labels.x","op":"eq","value":"y"},{"path":"spec.containers.0.image","op":"eq","value":"busybox"}]}}`)
	const ct = "application/vnd.kubernetes.protobuf"
	// label x=z: no match, forwarded byte for byte
	other := encodePod(t, "pod-z", map[string]string{"x": "z"})
	resp, _, err := h.do(h.h2, "POST", "/api/v1/namespaces/default/pods", ct, other)
	must(t, err)
	if resp.StatusCode != 201 {
		t.Fatalf("x=z: %d", resp.StatusCode)
	}
	reqs := h.api.requests()
	if len(reqs) != 1 || !bytes.Equal(reqs[0].Body, other) || reqs[0].ContentType != ct {
		t.Fatal("protobuf body not forwarded unchanged")
	}
	// label x=y: matched
	resp, _, err = h.do(h.h2, "POST", "/api/v1/namespaces/default/pods", ct, encodePod(t, "pod-y", map[string]string{"x": "y"}))
	must(t, err)
	if resp.StatusCode != 409 {
		t.Fatalf("x=y: %d", resp.StatusCode)
	}
	recs := h.findRecords(2, func(m map[string]any) bool { return m["type"] == "request" && m["verb"] == "create" })
	if recs[0]["name"] != "pod-z" || recs[0]["action"] != "pass" || recs[0]["content_type"] != ct {
		t.Fatalf("record %v", recs[0])
	}
	if recs[1]["name"] != "pod-y" || recs[1]["action"] != "failed" || recs[1]["rule"] != "pb" {
		t.Fatalf("record %v", recs[1])
	}
	m := h.waitRule("pb", "matched")
	if m["detail"].(map[string]any)["name"] != "pod-y" {
		t.Fatalf("matched %v", m)
	}
}

func TestProtobufToJSON(t *testing.T) {
	js, err := protobufToJSON(encodePod(t, "p", map[string]string{"a": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"kind":"Pod"`)) || !bytes.Contains(js, []byte(`"apiVersion":"v1"`)) || !bytes.Contains(js, []byte(`"a":"b"`)) {
		t.Fatalf("%s", js)
	}
}
