package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// Request bodies are forwarded byte for byte. They are decoded only when a
// rule with `fields` needs them, or to learn the name of an object a POST
// creates. Protobuf bodies (the `k8s\x00` envelope) are decoded with
// client-go's scheme into typed objects, then seen as JSON.

var pbSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

func isProtobuf(contentType string, body []byte) bool {
	return strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") || bytes.HasPrefix(body, protobufMagic)
}

func decodeProtobuf(body []byte) (runtime.Object, error) {
	obj, gvk, err := pbSerializer.Decode(body, nil, nil)
	if err != nil {
		return nil, err
	}
	if gvk != nil {
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
	}
	return obj, nil
}

// protobufToJSON turns a protobuf-encoded built-in object into its JSON form.
func protobufToJSON(body []byte) ([]byte, error) {
	obj, err := decodeProtobuf(body)
	if err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}

// bodyToValue decodes a request body (JSON, protobuf or YAML) into a generic
// JSON value. nil if it cannot.
func bodyToValue(contentType string, body []byte) any {
	if len(body) == 0 {
		return nil
	}
	var js []byte
	switch {
	case isProtobuf(contentType, body):
		b, err := protobufToJSON(body)
		if err != nil {
			return nil
		}
		js = b
	case strings.Contains(contentType, "yaml"):
		b, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil
		}
		js = b
	default:
		js = body
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return nil
	}
	return v
}

// bodyName returns metadata.name (or generateName) of a request body.
func bodyName(contentType string, body []byte) (name, generateName string, err error) {
	if len(body) == 0 {
		return "", "", errors.New("empty body")
	}
	if isProtobuf(contentType, body) {
		obj, err := decodeProtobuf(body)
		if err != nil {
			return "", "", err
		}
		a, err := meta.Accessor(obj)
		if err != nil {
			return "", "", err
		}
		return a.GetName(), a.GetGenerateName(), nil
	}
	if strings.Contains(contentType, "yaml") {
		b, err := yaml.YAMLToJSON(body)
		if err != nil {
			return "", "", err
		}
		body = b
	}
	var h struct {
		Metadata struct {
			Name         string `json:"name"`
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &h); err != nil {
		return "", "", err
	}
	return h.Metadata.Name, h.Metadata.GenerateName, nil
}
