package main

import (
	"context"
	"fmt"
	"time"

	"github.com/matrixorigin/matrixone/pkg/common/moerr"
	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	"github.com/matrixorigin/matrixone/pkg/pb/metadata"
	"github.com/matrixorigin/matrixone/pkg/pb/query"
	"github.com/matrixorigin/matrixone/pkg/pb/status"
	"github.com/matrixorigin/matrixone/pkg/queryservice"
)

// sessionSpec is what a CN's SHOW PROCESSLIST reports: Count sessions of one account,
// dispatched by the MO proxy or not. The operator counts sessions with FromProxy on
// MO versions with SessionSource, else sessions of any account but sys
// (matrixone-operator pkg/controllers/cnstore/controller.go:577-598).
type sessionSpec struct {
	Count     int    `json:"count"`
	Account   string `json:"account"`
	FromProxy bool   `json:"fromProxy"`
}

// queryKnobs is what one CN's query service reports.
type queryKnobs struct {
	Sessions  sessionSpec `json:"sessions"`
	Replicas  int64       `json:"replicas"`
	Pipelines int64       `json:"pipelines"`
}

func defaultQueryKnobs() queryKnobs {
	return queryKnobs{Sessions: sessionSpec{Account: "tenant1", FromProxy: true}}
}

// queryBackend gives a CN's query service its knobs and a way to log.
type queryBackend interface {
	queryKnobs(uuid string) (queryKnobs, string, bool)
	logRPC(service, method string, fields map[string]any)
}

// cnQueryServer is one CN's query service: MatrixOne's own queryservice server
// (pkg/queryservice/query_service.go:56-90, the one a CN starts) with handlers for the
// three methods the operator calls (matrixone-operator pkg/querycli/query.go:47-80),
// answering like the CN's (matrixone pkg/cnservice/server_query.go:228-242, 422-431,
// 482-490) from the knobs mo-chaos sets.
type cnQueryServer struct {
	svc queryservice.QueryService
}

func newCNQueryServer(uuid, address string, backend queryBackend) (*cnQueryServer, error) {
	moRuntime(metadata.ServiceType_CN, uuid)
	svc, err := queryservice.NewQueryService(uuid, address, morpc.Config{})
	if err != nil {
		return nil, err
	}
	wrap := func(method query.CmdMethod, answer func(*query.Request, *query.Response, queryKnobs, string) map[string]any) {
		svc.AddHandleFunc(method, func(
			_ context.Context, req *query.Request, resp *query.Response, _ *morpc.Buffer,
		) error {
			start := time.Now()
			knobs, pod, ok := backend.queryKnobs(uuid)
			var fields map[string]any
			if !ok {
				err := moerr.NewInternalErrorNoCtxf("CN %s is stopping", uuid)
				resp.WrapError(err)
				fields = map[string]any{"error": err.Error()}
			} else {
				fields = answer(req, resp, knobs, pod)
			}
			fields["uuid"], fields["pod"] = uuid, pod
			fields["elapsedMs"] = float64(time.Since(start).Microseconds()) / 1000
			backend.logRPC(svcQuery, method.String(), fields)
			return nil
		}, false)
	}
	wrap(query.CmdMethod_ShowProcessList, func(req *query.Request, resp *query.Response, k queryKnobs, pod string) map[string]any {
		if req.ShowProcessListRequest == nil {
			resp.WrapError(moerr.NewInternalErrorNoCtx("bad request"))
			return map[string]any{"error": "bad request"}
		}
		sessions := buildSessions(uuid, address, pod, k.Sessions, req.ShowProcessListRequest)
		resp.ShowProcessListResponse = &query.ShowProcessListResponse{Sessions: sessions}
		return map[string]any{"sessions": len(sessions), "sysTenant": req.ShowProcessListRequest.SysTenant}
	})
	wrap(query.CmdMethod_GetPipelineInfo, func(req *query.Request, resp *query.Response, k queryKnobs, _ string) map[string]any {
		if req.GetPipelineInfoRequest == nil {
			resp.WrapError(moerr.NewInternalErrorNoCtx("bad request"))
			return map[string]any{"error": "bad request"}
		}
		resp.GetPipelineInfoResponse = &query.GetPipelineInfoResponse{Count: k.Pipelines}
		return map[string]any{"pipelines": k.Pipelines}
	})
	wrap(query.CmdMethod_GetReplicaCount, func(_ *query.Request, resp *query.Response, k queryKnobs, _ string) map[string]any {
		resp.GetReplicaCount.Count = k.Replicas
		return map[string]any{"replicas": k.Replicas}
	})
	if err := svc.Start(); err != nil {
		return nil, err
	}
	return &cnQueryServer{svc: svc}, nil
}

// buildSessions makes the processlist: every session when the caller asks as the sys
// tenant, else the sessions of the caller's tenant (cnservice processList).
func buildSessions(uuid, address, pod string, spec sessionSpec, req *query.ShowProcessListRequest) []*status.Session {
	if !req.SysTenant && req.Tenant != spec.Account {
		return nil
	}
	now := time.Now()
	out := make([]*status.Session, 0, spec.Count)
	for i := 0; i < spec.Count; i++ {
		s := &status.Session{
			NodeID:       uuid,
			ConnID:       uint32(1000 + i),
			SessionID:    fmt.Sprintf("%s-session-%d", pod, i),
			Account:      spec.Account,
			User:         "mochaos",
			Host:         address,
			DB:           "mochaos",
			SessionStart: now,
			Command:      "Sleep",
			QueryStart:   now,
			ClientHost:   fmt.Sprintf("127.0.0.1:%d", 50000+i),
			Role:         "accountadmin",
			FromProxy:    spec.FromProxy,
		}
		if spec.FromProxy {
			s.ProxyHost = "mochaos-proxy"
		}
		out = append(out, s)
	}
	return out
}

func (q *cnQueryServer) close() {
	_ = q.svc.Close()
}
