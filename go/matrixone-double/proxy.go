package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/matrixorigin/matrixone/pkg/common/moerr"
	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	"github.com/matrixorigin/matrixone/pkg/logservice"
	"github.com/matrixorigin/matrixone/pkg/logutil"
	pb "github.com/matrixorigin/matrixone/pkg/pb/logservice"
	"github.com/matrixorigin/matrixone/pkg/pb/metadata"
)

const (
	maxMessageSize      = 100 * 1024 * 1024
	payloadCopyBuffer   = 16 * 1024
	defaultProxyTimeout = 10 * time.Second
)

// haProxy is the operator-facing log-service address: a morpc server with the log
// service's own codec (logservice/service.go:148-158) that forwards every request
// unchanged to the real log service and logs it. The log store advertises this address
// as its service address, so the HAKeeper clients' discovery (GET_SHARD_INFO) leads
// them here too.
type haProxy struct {
	namespace string
	upstream  string
	server    morpc.RPCServer
	client    morpc.RPCClient
	events    *eventLog
	podOf     func(uuid string) string
}

func newHAProxy(
	namespace, listen, upstream string, events *eventLog, podOf func(string) string,
) (*haProxy, error) {
	p := &haProxy{namespace: namespace, upstream: upstream, events: events, podOf: podOf}
	logger := logutil.GetGlobalLogger().Named("hakeeper-proxy")
	serverCodec := morpc.NewMessageCodec(doubleSID,
		func() morpc.Message { return &logservice.RPCRequest{} },
		morpc.WithCodecPayloadCopyBufferSize(payloadCopyBuffer),
		morpc.WithCodecEnableChecksum(),
		morpc.WithCodecMaxBodySize(maxMessageSize))
	server, err := morpc.NewRPCServer("hakeeper-proxy", listen, serverCodec,
		morpc.WithServerLogger(logger))
	if err != nil {
		return nil, err
	}
	// The client side mirrors the HAKeeper client's own (logservice/client.go:717-780).
	clientCodec := morpc.NewMessageCodec(doubleSID,
		func() morpc.Message { return &logservice.RPCResponse{} },
		morpc.WithCodecPayloadCopyBufferSize(payloadCopyBuffer),
		morpc.WithCodecEnableChecksum(),
		morpc.WithCodecMaxBodySize(maxMessageSize))
	factory := morpc.NewGoettyBasedBackendFactory(clientCodec,
		morpc.WithBackendConnectTimeout(time.Second),
		morpc.WithBackendHasPayloadResponse(),
		morpc.WithBackendLogger(logger))
	client, err := morpc.NewClient("hakeeper-proxy-client", factory,
		morpc.WithClientMaxBackendPerHost(4),
		morpc.WithClientLogger(logger))
	if err != nil {
		_ = server.Close()
		return nil, err
	}
	p.server, p.client = server, client
	server.RegisterRequestHandler(p.handle)
	if err := server.Start(); err != nil {
		_ = client.Close()
		return nil, err
	}
	return p, nil
}

func (p *haProxy) close() {
	_ = p.server.Close()
	_ = p.client.Close()
}

func (p *haProxy) handle(
	ctx context.Context, msg morpc.RPCMessage, _ uint64, cs morpc.ClientSession,
) error {
	req, ok := msg.Message.(*logservice.RPCRequest)
	if !ok {
		return fmt.Errorf("unexpected message %T", msg.Message)
	}
	start := time.Now()
	resp := p.forward(ctx, req)
	resp.RequestID = req.RequestID
	if req.Method != pb.TN_HEARTBEAT && req.Method != pb.CN_HEARTBEAT &&
		req.Method != pb.LOG_HEARTBEAT {
		p.log(req, resp, time.Since(start))
	}
	return cs.Write(ctx, resp)
}

func (p *haProxy) forward(ctx context.Context, req *logservice.RPCRequest) *logservice.RPCResponse {
	fwd := &logservice.RPCRequest{Request: req.Request}
	fwd.SetPayloadField(req.GetPayloadField())
	sendCtx, cancel := context.WithTimeout(ctx, defaultProxyTimeout)
	defer cancel()
	out := &logservice.RPCResponse{}
	f, err := p.client.Send(sendCtx, p.upstream, fwd)
	if err == nil {
		defer f.Close()
		var v morpc.Message
		if v, err = f.Get(); err == nil {
			got := v.(*logservice.RPCResponse)
			out.Response = got.Response
			out.SetPayloadField(got.GetPayloadField())
			return out
		}
	}
	// The log service is in this process; an error here means it is closing. Answer
	// like a log store that is not (yet) the HAKeeper: the clients retry on that code.
	out.Response = pb.Response{Method: req.Method, ErrorCode: uint32(moerr.ErrNoHAKeeper)}
	return out
}

func (p *haProxy) log(req *logservice.RPCRequest, resp *logservice.RPCResponse, took time.Duration) {
	f := map[string]any{"elapsedMs": float64(took.Microseconds()) / 1000}
	if resp.ErrorCode != 0 {
		f["errorCode"] = resp.ErrorCode
		if resp.ErrorMessage != "" {
			f["error"] = resp.ErrorMessage
		}
	}
	switch req.Method {
	case pb.PATCH_CN_STORE:
		if r := req.CNStateLabel; r != nil {
			f["uuid"], f["pod"] = r.UUID, p.podOf(r.UUID)
			f["workState"] = r.State.String()
			f["labels"] = labelMap(r.Labels)
		}
	case pb.UPDATE_CN_LABEL:
		if r := req.CNStoreLabel; r != nil {
			f["uuid"], f["pod"] = r.UUID, p.podOf(r.UUID)
			f["labels"] = labelMap(r.Labels)
		}
	case pb.UPDATE_CN_WORK_STATE:
		if r := req.CNWorkState; r != nil {
			f["uuid"], f["pod"] = r.UUID, p.podOf(r.UUID)
			f["workState"] = r.State.String()
		}
	case pb.DELETE_CN_STORE:
		if r := req.DeleteCNStore; r != nil {
			f["uuid"], f["pod"] = r.StoreID, p.podOf(r.StoreID)
		}
	case pb.GET_CLUSTER_DETAILS:
		if d := resp.ClusterDetails; d != nil {
			f["cnStores"] = summarizeCNs(d.CNStores, p.podOf)
			tns := make([]string, 0, len(d.TNStores))
			for _, tn := range d.TNStores {
				tns = append(tns, tn.UUID)
			}
			f["tnStores"] = tns
		}
	}
	p.events.emit(p.namespace, svcHAKeeper, req.Method.String(), f)
}

// cnSummary is one CN store as the event log and the control API show it.
type cnSummary struct {
	UUID      string              `json:"uuid"`
	Pod       string              `json:"pod,omitempty"`
	WorkState string              `json:"workState"`
	State     string              `json:"state"`
	Labels    map[string][]string `json:"labels"`
	Query     string              `json:"queryAddress,omitempty"`
	SQL       string              `json:"sqlAddress,omitempty"`
	Lock      string              `json:"lockServiceAddress,omitempty"`
	Pipeline  string              `json:"pipelineServiceAddress,omitempty"`
	Tick      uint64              `json:"tick"`
}

func summarizeCNs(stores []pb.CNStore, podOf func(string) string) []cnSummary {
	out := make([]cnSummary, 0, len(stores))
	for _, s := range stores {
		out = append(out, cnSummary{
			UUID: s.UUID, Pod: podOf(s.UUID), WorkState: s.WorkState.String(),
			State: s.State.String(), Labels: labelMap(s.Labels),
			Query: s.QueryAddress, SQL: s.SQLAddress, Lock: s.LockServiceAddress,
			Pipeline: s.ServiceAddress, Tick: s.Tick,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UUID < out[j].UUID })
	return out
}

func labelMap(labels map[string]metadata.LabelList) map[string][]string {
	out := make(map[string][]string, len(labels))
	for k, v := range labels {
		out[k] = append([]string{}, v.Labels...)
	}
	return out
}
