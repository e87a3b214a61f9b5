# The preset-a fixture of the test suite (tests/CMakeLists.txt), run by ctest as
#   cmake -DMODE=make|check -DOUT=DIR -DSYNTH=gptoss-synth -DCONVERT=gptoss-convert -DTOKENIZER=tokenizer.json -P this
# MODE=make writes DIR/hf and DIR/original (gptoss-synth; TOKENIZER is copied into hf/ when it
# exists), DIR/model.gguf (gptoss-convert, BF16 dense tensors) and DIR/SHA256SUMS;
# MODE=check fails when any of those files changed: every test reads them at the same time, none
# may write into them.
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE STATUS OUTPUT_VARIABLE OUT ERROR_VARIABLE OUT)
  if(NOT STATUS EQUAL 0)
    message(FATAL_ERROR "preset-a fixture: `${ARGN}` failed (${STATUS}):\n${OUT}")
  endif()
endfunction()

# Every file under OUT but SHA256SUMS, relative to OUT, with its sha256.
function(list_sums RESULT)
  file(GLOB_RECURSE FILES RELATIVE ${OUT} ${OUT}/*)
  list(REMOVE_ITEM FILES SHA256SUMS)
  list(SORT FILES)
  set(SUMS "")
  foreach(F ${FILES})
    file(SHA256 ${OUT}/${F} SUM)
    string(APPEND SUMS "${SUM}  ${F}\n")
  endforeach()
  set(${RESULT} "${SUMS}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "make")
  file(REMOVE_RECURSE ${OUT})
  set(SYNTH_ARGS ${OUT} --preset a)
  if(EXISTS ${TOKENIZER})
    list(APPEND SYNTH_ARGS --tokenizer ${TOKENIZER})
  endif()
  run(${SYNTH} ${SYNTH_ARGS})
  run(${CONVERT} ${OUT}/hf ${OUT}/model.gguf --dense bf16 -q)
  list_sums(SUMS)
  file(WRITE ${OUT}/SHA256SUMS "${SUMS}")
elseif(MODE STREQUAL "check")
  file(READ ${OUT}/SHA256SUMS EXPECTED)
  list_sums(SUMS)
  if(NOT SUMS STREQUAL EXPECTED)
    message(FATAL_ERROR "preset-a fixture: a test changed the shared files in ${OUT}\nexpected:\n${EXPECTED}found:\n${SUMS}")
  endif()
else()
  message(FATAL_ERROR "preset_a_fixture.cmake: MODE must be make or check")
endif()
