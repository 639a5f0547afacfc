package qualify

import (
	"encoding/json"
	"fmt"

	"github.com/cacheon/engine/evaluator/evidence"
	"github.com/cacheon/engine/evaluator/speed"
	"github.com/cacheon/engine/internal/canonjson"
)

// publishSpeed writes the speed stage's raw evidence (the policy, the
// reads in read order, every served batch) to the store and returns the
// stage's record. Reads are kept even when the stage did not grade, so a
// NO_DECISION can be inspected; a record with no speedup is not re-graded.
func publishSpeed(store *evidence.Store, ev *SpeedEvidence) (*Speed, error) {
	s := &Speed{Decision: ev.Decision, Reason: ev.Reason, Version: ev.Policy.Version}
	policy, err := canonjson.Marshal(ev.Policy.Projection())
	if err != nil {
		return nil, fmt.Errorf("speed policy: %w", err)
	}
	if s.Policy, err = store.Put(ArtifactPolicy, "application/json", "speed-policy.v1", policy); err != nil {
		return nil, err
	}
	reads, err := speed.MarshalReads(ev.Reads)
	if err != nil {
		return nil, err
	}
	if s.Reads, err = store.Put(ArtifactReads, "application/json", "speed-reads.v1", reads); err != nil {
		return nil, err
	}
	batches, err := json.Marshal(ev.Batches)
	if err != nil {
		return nil, err
	}
	if s.Batches, err = store.Put(ArtifactBatches, "application/json", "speed-batches.v1", batches); err != nil {
		return nil, err
	}
	swaps, err := json.Marshal(ev.Swaps)
	if err != nil {
		return nil, err
	}
	if s.Swaps, err = store.Put(ArtifactSwaps, "application/json", "hot-swaps.v1", swaps); err != nil {
		return nil, err
	}
	samples, err := json.Marshal(ev.Samples)
	if err != nil {
		return nil, err
	}
	if s.Samples, err = store.Put(ArtifactSamples, "application/json", "lane-samples.v1", samples); err != nil {
		return nil, err
	}
	if ev.Idle != nil {
		idle, err := json.Marshal(ev.Idle)
		if err != nil {
			return nil, err
		}
		ref, err := store.Put(ArtifactIdleCPU, "application/json", "idle-cpu.v1", idle)
		if err != nil {
			return nil, err
		}
		s.IdleCPU = &ref
	}
	if sa := ev.SetAside; sa != nil {
		rec := &SetAsideRecord{Reason: sa.Reason}
		reads, err := speed.MarshalReads(sa.Reads)
		if err != nil {
			return nil, err
		}
		if rec.Reads, err = store.Put(ArtifactReads, "application/json", "speed-reads.v1", reads); err != nil {
			return nil, err
		}
		samples, err := json.Marshal(sa.Samples)
		if err != nil {
			return nil, err
		}
		if rec.Samples, err = store.Put(ArtifactSamples, "application/json", "lane-samples.v1", samples); err != nil {
			return nil, err
		}
		s.SetAside = rec
	}
	if ev.Grade != nil {
		s.Speedup = speed.Format(ev.Grade.Speedup)
	}
	return s, nil
}
