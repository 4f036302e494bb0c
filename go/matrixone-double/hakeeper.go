package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/google/uuid"
	"github.com/lni/vfs"
	"github.com/matrixorigin/matrixone/pkg/common/morpc"
	moruntime "github.com/matrixorigin/matrixone/pkg/common/runtime"
	"github.com/matrixorigin/matrixone/pkg/defines"
	"github.com/matrixorigin/matrixone/pkg/fileservice"
	"github.com/matrixorigin/matrixone/pkg/logservice"
	"github.com/matrixorigin/matrixone/pkg/logutil"
	"github.com/matrixorigin/matrixone/pkg/pb/metadata"
)

// Ports on a namespace's loopback address. The operator dials the log service at
// 32001 (matrixone-operator pkg/controllers/logset/configmap.go:37, discovery.go:48-51)
// and a TN's lock service at 6003 (pkg/controllers/common/consts.go:18); the others
// follow a real log store (raft 32000, gossip 32002).
const (
	logServicePort      = 32001 // the operator-facing proxy in front of the log service
	raftPort            = 32000
	gossipPort          = 32002
	logServiceInnerPort = 32011 // where the real log service listens (behind the proxy)
	tnLockServicePort   = 6003
	tnServicePort       = 6002
	tnLogtailPort       = 32003
	cnPortBase          = 40000 // CN i uses cnPortBase + 10*i … +3
)

// hakeeperOptions tune the real HAKeeper of every namespace.
type hakeeperOptions struct {
	cnStoreTimeout time.Duration
	tnStoreTimeout time.Duration
	checkInterval  time.Duration
	rttMillisecond uint64
}

// logStore is one namespace's MatrixOne log service: a real logservice.Service on an
// in-memory file system hosting the HAKeeper replica and log shard 1, bootstrapped the
// way mo-service bootstraps a one-replica cluster (cmd/mo-service/main.go:328-378).
type logStore struct {
	svc       *logservice.Service
	uuid      string
	innerAddr string
}

// doubleSID is the MatrixOne service id of the double's own clients and servers (its
// runtime logs to matrixone.log).
const doubleSID = "mochaos-double"

// moRuntime registers a MatrixOne runtime for a service id: MatrixOne's packages look
// their logger up by service id and dereference it.
func moRuntime(serviceType metadata.ServiceType, sid string) moruntime.Runtime {
	if rt := moruntime.ServiceRuntime(sid); rt != nil {
		return rt
	}
	rt := moruntime.NewRuntime(serviceType, sid, logutil.GetGlobalLogger())
	moruntime.SetupServiceBasedRuntime(sid, rt)
	return rt
}

func memoryFileServices() (fileservice.FileService, error) {
	var fss []fileservice.FileService
	for _, name := range []string{
		defines.LocalFileServiceName, defines.SharedFileServiceName, defines.ETLFileServiceName,
	} {
		fs, err := fileservice.NewMemoryFS(name, fileservice.DisabledCacheConfig, nil)
		if err != nil {
			return nil, err
		}
		fss = append(fss, fs)
	}
	return fileservice.NewFileServices("", fss...)
}

// portsFree reports whether every port can be bound on ip (a busy address belongs to
// another double or process; MatrixOne's servers exit the process on a failed bind).
func portsFree(ip string, ports ...int) error {
	for _, p := range ports {
		addr := fmt.Sprintf("%s:%d", ip, p)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s busy: %w", addr, err)
		}
		_ = l.Close()
		if p == gossipPort {
			u, err := net.ListenPacket("udp", addr)
			if err != nil {
				return fmt.Errorf("%s/udp busy: %w", addr, err)
			}
			_ = u.Close()
		}
	}
	return nil
}

func startLogStore(ip string, opts hakeeperOptions) (*logStore, error) {
	id := uuid.New().String()
	rt := moRuntime(metadata.ServiceType_LOG, id)
	cfg := logservice.DefaultConfig()
	cfg.UUID = id
	cfg.FS = vfs.NewMem()
	cfg.DataDir = "/logservice"
	cfg.SnapshotExportDir = "/export"
	cfg.DeploymentID = 1
	cfg.RTTMillisecond = opts.rttMillisecond
	cfg.ServiceHost = ip
	cfg.ServiceAddress = fmt.Sprintf("%s:%d", ip, logServicePort)
	cfg.ServiceListenAddress = fmt.Sprintf("%s:%d", ip, logServiceInnerPort)
	cfg.RaftAddress = fmt.Sprintf("%s:%d", ip, raftPort)
	cfg.GossipAddress = fmt.Sprintf("%s:%d", ip, gossipPort)
	cfg.GossipSeedAddresses = []string{cfg.GossipAddress}
	cfg.HAKeeperClientConfig.ServiceAddresses = []string{cfg.ServiceListenAddress}
	cfg.BootstrapConfig.InitHAKeeperMembers = []string{"131072:" + id}
	cfg.HAKeeperConfig.CNStoreTimeout.Duration = opts.cnStoreTimeout
	cfg.HAKeeperConfig.TNStoreTimeout.Duration = opts.tnStoreTimeout
	if opts.checkInterval > 0 {
		cfg.HAKeeperCheckInterval.Duration = opts.checkInterval
	}
	fs, err := memoryFileServices()
	if err != nil {
		return nil, err
	}
	svc, err := logservice.NewService(cfg, fs, nil,
		logservice.WithRuntime(rt),
		logservice.WithBackendFilter(func(morpc.Message, string) bool { return true }))
	if err != nil {
		return nil, fmt.Errorf("start log service: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.BootstrapHAKeeper(ctx, cfg); err != nil {
		_ = svc.Close()
		return nil, fmt.Errorf("bootstrap HAKeeper: %w", err)
	}
	return &logStore{svc: svc, uuid: id, innerAddr: cfg.ServiceListenAddress}, nil
}

func (l *logStore) close() error {
	return l.svc.Close()
}
