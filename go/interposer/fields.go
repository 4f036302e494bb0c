package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// FieldCond is one condition on a JSON object: the request body of a write,
// or the object of a watch event.
type FieldCond struct {
	Path  string          `json:"path"`
	Op    string          `json:"op"`
	Value json.RawMessage `json:"value,omitempty"`

	segs []string
	val  any
}

func (c *FieldCond) compile() error {
	if c.Path == "" {
		return fmt.Errorf("fields: empty path")
	}
	c.segs = splitFieldPath(c.Path)
	for _, s := range c.segs {
		if s == "" {
			return fmt.Errorf("fields: path %q has an empty segment", c.Path)
		}
	}
	switch c.Op {
	case "eq", "ne":
		if len(c.Value) == 0 {
			return fmt.Errorf("fields: op %q on %q needs a value", c.Op, c.Path)
		}
		if err := json.Unmarshal(c.Value, &c.val); err != nil {
			return fmt.Errorf("fields: value of %q: %v", c.Path, err)
		}
	case "exists", "absent":
		if len(c.Value) != 0 {
			return fmt.Errorf("fields: op %q on %q takes no value", c.Op, c.Path)
		}
	case "":
		return fmt.Errorf("fields: missing op on %q (eq, ne, exists, absent)", c.Path)
	default:
		return fmt.Errorf("fields: unknown op %q (eq, ne, exists, absent)", c.Op)
	}
	return nil
}

// splitFieldPath splits "a.b.c" on dots; "\." is a literal dot inside a
// segment (metadata.labels.app\.kubernetes\.io/name).
func splitFieldPath(p string) []string {
	if !strings.Contains(p, `\`) {
		return strings.Split(p, ".")
	}
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			cur.WriteByte(p[i])
		case p[i] == '.':
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	return append(segs, cur.String())
}

func lookupPath(obj any, segs []string) (any, bool) {
	cur := obj
	for _, s := range segs {
		switch v := cur.(type) {
		case map[string]any:
			var ok bool
			cur, ok = v[s]
			if !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (c *FieldCond) eval(obj any) bool {
	v, ok := lookupPath(obj, c.segs)
	switch c.Op {
	case "exists":
		return ok
	case "absent":
		return !ok
	case "eq":
		return ok && reflect.DeepEqual(v, c.val)
	case "ne":
		return !(ok && reflect.DeepEqual(v, c.val))
	}
	return false
}
