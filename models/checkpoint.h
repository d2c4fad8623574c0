// Checkpoints: parameters, optionally Adam's state and optionally extra named
// state (batch-norm running statistics, counters) in one binary file.
//
// Layout (version 2), little-endian:
//   "MARECKPT"            8 bytes, magic
//   u32 version           kCheckpointVersion
//   u64 payload_bytes
//   payload:
//     u64 step            Adam's step count (0 when saved without an optimiser)
//     u32 tensor_count
//     per tensor: u32 name_len, name, u32 dtype (0 float32, 1 int32), u32 rank,
//                 i64 dims[rank], data[numel] (4 bytes each)
//   u64 checksum          FNV-1a 64 of the payload
// Names: a parameter under its own name; Adam's moments as "adam.m/<name>" and
// "adam.v/<name>"; extra state as "extra/<key>" (ParameterSet reserves both
// prefixes). Tensors are written in that order (parameters in registration
// order, extra keys sorted), so the same state gives the same bytes.
// Version 1 had no dtype field (float32 only); no version-1 checkpoint is kept
// anywhere, so this build reads version 2 only.
//
// Tensors are copied to the CPU to be written and back to the device of the
// tensor they fill when read: a checkpoint does not depend on the device.
// Written to a temporary file and renamed, so a crash never leaves a partial
// checkpoint under the final name.
//
// Loading is strict, and checks everything before it changes anything (a
// refused file leaves the model as it was). It refuses, with a message naming
// the file: a wrong magic, another version, a truncated file, trailing bytes
// (padding or a corrupted size field), a bad checksum, a malformed payload or
// duplicate names; any mismatch by name between the file's parameters and the
// model's (missing or superfluous), or of shape or dtype; when an Adam is
// given, missing optimiser state or moments that match no parameter; extra
// state that differs by name from the map given, or extra state in the file
// when no map is given (running statistics are part of what a model computes).
// Optimiser state in the file is skipped when no Adam is given: loading the
// weights alone, to evaluate, is deliberate.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "kernels/tensor.h"
#include "models/optim.h"
#include "models/parameters.h"

namespace mare {

inline constexpr uint32_t kCheckpointVersion = 2;

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Extra named state saved beside the parameters (e.g. a model's nn::Buffers):
// float32 or int32 tensors on any device; keys must be non-empty.
using CheckpointExtra = std::map<std::string, Tensor>;

void save_checkpoint(const std::string& path, const ParameterSet& params, Adam* adam = nullptr,
                     const CheckpointExtra* extra = nullptr);
// Fills params (and adam, and extra, when given) from the file, in place on the
// tensors' devices. An `extra` entry that is defined is filled in place (its
// shape and dtype must match); an undefined one receives the file's tensor on
// the CPU. The set of `extra` keys must equal the file's.
void load_checkpoint(const std::string& path, ParameterSet& params, Adam* adam = nullptr,
                     CheckpointExtra* extra = nullptr);

}  // namespace mare
