package main

import (
	"context"
	"fmt"
	"time"

	"github.com/matrixorigin/matrixone/pkg/common/moerr"
	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	"github.com/matrixorigin/matrixone/pkg/pb/lock"
)

// Lock-service states of a CN as the TN's lock-table allocator tracks them
// (matrixone pkg/pb/lock: Status_ServiceLockEnable / ServiceLockWaiting / ServiceCanRestart).
const (
	lockNormal     = "normal"
	lockWaiting    = "lockWaiting"
	lockCanRestart = "canRestart"
)

// lockKnobs is what the TN's allocator knows about one CN's lock service. A CN that
// never bound a lock table is unknown to the allocator (bound=false).
type lockKnobs struct {
	Bound      bool   `json:"bound"`
	RemainTxns int    `json:"remainTxns"`
	Status     string `json:"status"`
}

// Answers of the allocator, re-stated from matrixone pkg/lockservice/lock_table_allocator.go
// (@fa8af5c4dad4): setRestartService 217-231, remainTxnInService 233-260,
// canRestartService 272-286, and the handlers 857-886 (SetRestartService always OK).
// A waiting CN becomes restartable once its transactions are gone (the CN side reports
// this through its keep-alive; here it is evaluated on every call).

func (k *lockKnobs) settle() {
	if k.Status == "" {
		k.Status = lockNormal
	}
	if k.Bound && k.Status == lockWaiting && k.RemainTxns == 0 {
		k.Status = lockCanRestart
	}
}

func (k *lockKnobs) setRestart() bool {
	k.settle()
	if k.Bound && k.Status == lockNormal {
		k.Status = lockWaiting
		k.settle()
	}
	return true
}

func (k *lockKnobs) canRestart() bool {
	k.settle()
	if !k.Bound {
		return true
	}
	return k.Status == lockCanRestart
}

func (k *lockKnobs) remainTxn() int32 {
	k.settle()
	if !k.Bound {
		return 0
	}
	if k.RemainTxns == 0 && k.Status != lockCanRestart {
		return -1
	}
	return int32(k.RemainTxns)
}

// lockServer is a TN's lock-service RPC endpoint: a morpc server built like the TN's
// (matrixone pkg/lockservice/rpc.go:250-283: morpc.Config.NewServer with lock.Request
// messages, auto-cancel disabled) answering the three calls the operator makes
// (matrixone-operator pkg/mocli/lockservice_client.go:342-373).
type lockServer struct {
	server morpc.RPCServer
}

// lockBackend gives the lock server the CN knobs and a way to log.
type lockBackend interface {
	withLockKnobs(serviceID string, fn func(k *lockKnobs) any) any
	logRPC(service, method string, fields map[string]any)
}

func newLockServer(address string, backend lockBackend) (*lockServer, error) {
	cfg := morpc.Config{}
	cfg.Adjust()
	server, err := cfg.NewServer(doubleSID, "lock-server", address,
		func() morpc.Message { return &lock.Request{} },
		func(morpc.Message) {},
		morpc.WithServerDisableAutoCancelContext())
	if err != nil {
		return nil, err
	}
	s := &lockServer{server: server}
	server.RegisterRequestHandler(func(
		ctx context.Context, msg morpc.RPCMessage, _ uint64, cs morpc.ClientSession,
	) error {
		if msg.Cancel != nil {
			defer msg.Cancel()
		}
		req, ok := msg.Message.(*lock.Request)
		if !ok {
			return fmt.Errorf("unexpected message %T", msg.Message)
		}
		start := time.Now()
		resp := &lock.Response{RequestID: req.RequestID, Method: req.Method}
		fields := map[string]any{}
		switch req.Method {
		case lock.Method_SetRestartService:
			id := req.SetRestartService.ServiceID
			resp.SetRestartService.OK = backend.withLockKnobs(id, func(k *lockKnobs) any {
				return k.setRestart()
			}).(bool)
			fields["uuid"], fields["ok"] = id, resp.SetRestartService.OK
		case lock.Method_CanRestartService:
			id := req.CanRestartService.ServiceID
			resp.CanRestartService.OK = backend.withLockKnobs(id, func(k *lockKnobs) any {
				return k.canRestart()
			}).(bool)
			fields["uuid"], fields["ok"] = id, resp.CanRestartService.OK
		case lock.Method_RemainTxnInService:
			id := req.RemainTxnInService.ServiceID
			resp.RemainTxnInService.RemainTxn = backend.withLockKnobs(id, func(k *lockKnobs) any {
				return k.remainTxn()
			}).(int32)
			fields["uuid"], fields["remainTxn"] = id, resp.RemainTxnInService.RemainTxn
		default:
			err := moerr.NewNotSupportedNoCtxf("method [%s], from %s, current %s",
				req.Method.String(), cs.RemoteAddress(), address)
			resp.WrapError(err)
			fields["error"] = err.Error()
		}
		fields["elapsedMs"] = float64(time.Since(start).Microseconds()) / 1000
		backend.logRPC(svcLock, req.Method.String(), fields)
		return cs.Write(ctx, resp)
	})
	if err := server.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *lockServer) close() {
	_ = s.server.Close()
}
