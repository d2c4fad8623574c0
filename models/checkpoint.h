// Checkpoints: parameters (and optionally Adam's state) in one binary file.
//
// Layout, little-endian:
//   "MARECKPT"            8 bytes, magic
//   u32 version           kCheckpointVersion
//   u64 payload_bytes
//   payload:
//     u64 step
//     u32 tensor_count
//     per tensor: u32 name_len, name, u32 rank, i64 dims[rank], f32 data[numel]
//   u64 checksum          FNV-1a 64 of the payload
// Adam's moments are stored as "adam.m/<name>" and "adam.v/<name>".
// Written to a temporary file and renamed, so a crash never leaves a partial
// checkpoint under the final name. Loading refuses, with a message naming the
// file: a wrong magic, another version, a truncated file, a bad checksum, and
// parameters missing from the file or of another shape.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/optim.h"
#include "models/parameters.h"

namespace mare {

inline constexpr uint32_t kCheckpointVersion = 1;

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void save_checkpoint(const std::string& path, const ParameterSet& params, Adam* adam = nullptr);
// Fills params (and adam when given) from the file.
void load_checkpoint(const std::string& path, ParameterSet& params, Adam* adam = nullptr);

}  // namespace mare
