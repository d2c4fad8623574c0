#!/bin/sh
# The layering of SPEC §1, checked on the sources' #include lines:
#   kernels ← models ← experiments, with stats below experiments and reports; the CLI
#   (experiments/cli) is the top and may include any layer. Within kernels, the CPU ops
#   (kernels/ops, kernels/memory) include nothing from the CUDA backend (kernels/cuda):
#   they reach it through the dispatch table of kernels/backend.h.
# Prints every include that points the wrong way and fails if there is one.
# Usage: tests/layering.sh [SOURCE_DIR]
cd "${1:-.}" || exit 2
status=0
# check DIR EXCLUDED_DIR ALLOWED_PREFIX... : includes of the files under DIR (but not
# under EXCLUDED_DIR) must start with one of the allowed prefixes
check() {
  dir=$1 skip=$2
  shift 2
  pattern=$(printf '%s|' "$@")
  pattern=${pattern%|}
  bad=$(git ls-files "$dir" | grep -E '\.(h|cpp|cu|cuh)$' | { [ -n "$skip" ] && grep -v "^$skip" || cat; } |
        xargs -r grep -nE '^#include "' | grep -vE "#include \"($pattern)")
  if [ -n "$bad" ]; then
    echo "$dir may include only $*; found:"
    echo "$bad"
    status=1
  fi
}
check kernels/ "" kernels/
check models/ "" kernels/ models/
check stats/ "" stats/
check reports/ "" reports/ stats/
check experiments/ experiments/cli/ experiments/ models/ kernels/ stats/ mare_build_info.h
check experiments/data/ "" experiments/data/  # plain C++: no kernels/ nor models/ (its README)
for dir in kernels/ops/ kernels/memory/; do
  bad=$(git ls-files "$dir" | xargs -r grep -n '^#include "kernels/cuda/')
  if [ -n "$bad" ]; then
    echo "$dir may not include the CUDA backend (kernels/cuda/; use kernels/backend.h); found:"
    echo "$bad"
    status=1
  fi
done
[ $status -eq 0 ] && echo "layering: every include points down"
exit $status
