# Writes OUT (mare_git_commit.h): the commit the sources are at, with "-dirty" when a
# tracked file differs from it. The mare_git_commit target runs this at every build, so
# that `mare --version` and every manifest name the sources the binary was built from
# (a run from a tree with uncommitted changes says so); the header is rewritten only
# when its text changes, so nothing recompiles otherwise.
#   cmake -DSRC=<source dir> -DOUT=<header> -P cmake/git_commit.cmake
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY "${SRC}"
                  OUTPUT_VARIABLE changes ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND NOT changes STREQUAL "")
    string(APPEND commit "-dirty")
  endif()
endif()
set(text "// Generated at every build by cmake/git_commit.cmake — do not edit.\n#pragma once\n#define MARE_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
