# The torch_npu wheel that scripts/setup.sh unpacks (never installs) as the reference for the
# Ascend tests and the NPU header compile. Absent (another architecture, no network at set-up):
# CROSSTRAIN_HAVE_TORCH_NPU is OFF and those tests skip, saying so.
set(CROSSTRAIN_TORCH_NPU_VERSION 2.11.0.post3)
set(CROSSTRAIN_TORCH_NPU_DIR "${PROJECT_SOURCE_DIR}/third_party/torch_npu/${CROSSTRAIN_TORCH_NPU_VERSION}"
  CACHE PATH "Unpacked torch_npu wheel (the directory holding torch_npu/)")
if(EXISTS "${CROSSTRAIN_TORCH_NPU_DIR}/torch_npu/lib/libtorch_npu.so")
  set(CROSSTRAIN_HAVE_TORCH_NPU ON)
  message(STATUS "torch_npu reference: ${CROSSTRAIN_TORCH_NPU_DIR}")
else()
  set(CROSSTRAIN_HAVE_TORCH_NPU OFF)
  message(STATUS "torch_npu reference: not found in ${CROSSTRAIN_TORCH_NPU_DIR} (scripts/setup.sh); its tests skip")
endif()
