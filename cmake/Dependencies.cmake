# Dependencies: Debian 12 packages (run_all.sh installs what is missing).
# One message(STATUS) line per detected dependency.

find_package(Eigen3 3.3 REQUIRED NO_MODULE)
message(STATUS "mare: Eigen ${Eigen3_VERSION} (CPU dense algebra)")

find_path(RANDOM123_INCLUDE_DIR Random123/philox.h REQUIRED)
add_library(mare_random123 INTERFACE)
target_include_directories(mare_random123 SYSTEM INTERFACE ${RANDOM123_INCLUDE_DIR})
message(STATUS "mare: Random123 at ${RANDOM123_INCLUDE_DIR} (Philox 4x32-10)")

find_package(CLI11 REQUIRED)
message(STATUS "mare: CLI11 ${CLI11_VERSION} (command line)")

find_package(nlohmann_json 3 REQUIRED)
message(STATUS "mare: nlohmann_json ${nlohmann_json_VERSION} (JSON results)")

find_package(yaml-cpp REQUIRED)
message(STATUS "mare: yaml-cpp ${yaml-cpp_VERSION} (experiment specs)")

find_package(pugixml 1.11 REQUIRED)
message(STATUS "mare: pugixml ${pugixml_VERSION} (SemEval 2018 Task 7 XML)")

find_package(Boost 1.74 REQUIRED)
message(STATUS "mare: Boost ${Boost_VERSION} headers (Boost.Math distributions)")

find_package(Threads REQUIRED)

if(MARE_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
  message(STATUS "mare: GoogleTest ${GTest_VERSION}")
endif()
if(MARE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
  message(STATUS "mare: Google Benchmark ${benchmark_VERSION}")
endif()

find_program(MARE_GNUPLOT gnuplot)
if(MARE_GNUPLOT)
  message(STATUS "mare: gnuplot at ${MARE_GNUPLOT} (plots)")
else()
  message(STATUS "mare: gnuplot not found (plots are skipped)")
endif()

# CUDA: AUTO builds the backend whenever nvcc is found.
set(MARE_HAVE_CUDA OFF)
if(NOT MARE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MARE_HAVE_CUDA ON)
  elseif(MARE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MARE_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
if(MARE_HAVE_CUDA)
  # CUDA 13 has no target below compute capability 7.5.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "75;90" CACHE STRING "CUDA architectures to compile for")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # CMake 3.25 predates nvcc's C++20 support (CUDA 12+): teach it the flag.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "mare: CUDA backend on: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}, cuBLAS ${CUDAToolkit_VERSION} (MARE_CUDA=${MARE_CUDA})")
else()
  message(STATUS "mare: CUDA backend off (MARE_CUDA=${MARE_CUDA})")
endif()
