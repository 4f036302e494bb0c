package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	"github.com/matrixorigin/matrixone/pkg/logservice"
	"github.com/matrixorigin/matrixone/pkg/logutil"
	"github.com/matrixorigin/matrixone/pkg/pb/lock"
	"github.com/matrixorigin/matrixone/pkg/pb/query"
	"github.com/matrixorigin/matrixone/pkg/txn/rpc"
)

// `matrixone-double probe …` calls a MatrixOne endpoint with the clients the operator
// builds and prints the answer as JSON: a way to check the double (or a real MatrixOne)
// from outside, the way the operator sees it.

const rpcTimeout = 10 * time.Second

// newQueryClient is the operator's CN query client (matrixone-operator
// pkg/querycli/query.go:34-45).
func newQueryClient() (morpc.RPCClient, error) {
	pool := morpc.NewMessagePool(
		func() *query.Request { return &query.Request{} },
		func() *query.Response { return &query.Response{} })
	return rpc.Config{}.NewClient("", "query-service",
		func() morpc.Message { return pool.AcquireResponse() })
}

// newLockClient is the operator's TN lock-service client (matrixone-operator
// pkg/mocli/lockservice_client.go:327-340).
func newLockClient() (morpc.RPCClient, error) {
	cfg := morpc.Config{}
	cfg.Adjust()
	cfg.BackendOptions = append(cfg.BackendOptions, morpc.WithBackendReadTimeout(rpcTimeout))
	return cfg.NewClient("", "lock-client", func() morpc.Message { return &lock.Response{} })
}

func call(cli morpc.RPCClient, addr string, req morpc.Message) (morpc.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	f, err := cli.Send(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Get()
}

func queryCall(addr string, req *query.Request) (*query.Response, error) {
	cli, err := newQueryClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	v, err := call(cli, addr, req)
	if err != nil {
		return nil, err
	}
	return v.(*query.Response), nil
}

func lockCall(addr string, req *lock.Request) (*lock.Response, error) {
	cli, err := newLockClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	v, err := call(cli, addr, req)
	if err != nil {
		return nil, err
	}
	resp := v.(*lock.Response)
	return resp, resp.UnwrapError()
}

func runProbe(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("probe: give one of details, processlist, replicas, pipelines, lock")
	}
	what := args[0]
	fs := flag.NewFlagSet("probe "+what, flag.ContinueOnError)
	addr := fs.String("address", "", "discovery address (details) or the endpoint's address")
	tenant := fs.String("tenant", "", "processlist: ask as this tenant instead of sys")
	id := fs.String("uuid", "", "lock: the CN store's UUID")
	setRestart := fs.Bool("set-restart", false, "lock: call SetRestartService first")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *addr == "" {
		return fmt.Errorf("probe %s: --address is required", what)
	}
	// The clients log through MatrixOne's loggers, some of which open "stdout" when they
	// are created: point that at stderr and keep the real stdout for the answer.
	answer := os.Stdout
	os.Stdout = os.Stderr
	logutil.SetupMOLogger(&logutil.LogConfig{Level: "fatal", Format: "json", Filename: os.DevNull})
	var out any
	switch what {
	case "details":
		ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
		defer cancel()
		cli, err := logservice.NewProxyHAKeeperClient(ctx, "",
			logservice.HAKeeperClientConfig{DiscoveryAddress: *addr})
		if err != nil {
			return err
		}
		defer cli.Close()
		d, err := cli.GetClusterDetails(ctx)
		if err != nil {
			return err
		}
		tns := make([]map[string]string, 0, len(d.TNStores))
		for _, t := range d.TNStores {
			tns = append(tns, map[string]string{"uuid": t.UUID, "lockServiceAddress": t.LockServiceAddress})
		}
		out = map[string]any{
			"cnStores": summarizeCNs(d.CNStores, func(string) string { return "" }),
			"tnStores": tns,
		}
	case "processlist":
		req := &query.ShowProcessListRequest{SysTenant: *tenant == "", Tenant: *tenant}
		resp, err := queryCall(*addr, &query.Request{
			CmdMethod: query.CmdMethod_ShowProcessList, ShowProcessListRequest: req})
		if err != nil {
			return err
		}
		sessions := make([]map[string]any, 0)
		for _, s := range resp.ShowProcessListResponse.GetSessions() {
			sessions = append(sessions, map[string]any{
				"account": s.Account, "fromProxy": s.FromProxy, "connID": s.ConnID, "nodeID": s.NodeID,
			})
		}
		out = map[string]any{"sessions": sessions}
	case "replicas":
		resp, err := queryCall(*addr, &query.Request{
			CmdMethod: query.CmdMethod_GetReplicaCount, GetReplicaCount: query.GetReplicaCountRequest{}})
		if err != nil {
			return err
		}
		out = map[string]any{"count": resp.GetReplicaCount.Count}
	case "pipelines":
		resp, err := queryCall(*addr, &query.Request{
			CmdMethod: query.CmdMethod_GetPipelineInfo, GetPipelineInfoRequest: &query.GetPipelineInfoRequest{}})
		if err != nil {
			return err
		}
		out = map[string]any{"count": resp.GetPipelineInfoResponse.GetCount()}
	case "lock":
		result := map[string]any{}
		if *setRestart {
			resp, err := lockCall(*addr, &lock.Request{Method: lock.Method_SetRestartService,
				SetRestartService: lock.SetRestartServiceRequest{ServiceID: *id}})
			if err != nil {
				return err
			}
			result["setRestart"] = resp.SetRestartService.OK
		}
		can, err := lockCall(*addr, &lock.Request{Method: lock.Method_CanRestartService,
			CanRestartService: lock.CanRestartServiceRequest{ServiceID: *id}})
		if err != nil {
			return err
		}
		remain, err := lockCall(*addr, &lock.Request{Method: lock.Method_RemainTxnInService,
			RemainTxnInService: lock.RemainTxnInServiceRequest{ServiceID: *id}})
		if err != nil {
			return err
		}
		result["canRestart"] = can.CanRestartService.OK
		result["remainTxn"] = remain.RemainTxnInService.RemainTxn
		out = result
	default:
		return fmt.Errorf("probe: unknown call %q (details, processlist, replicas, pipelines, lock)", what)
	}
	return json.NewEncoder(answer).Encode(out)
}
