# `cmake --install build --prefix PREFIX` (a virtual environment, a conda environment, /usr/local):
#   PREFIX/bin/crosstrain                   the front
#   PREFIX/bin/crosstrain-engine            beside it: the front execs the engine next to itself
#   PREFIX/share/crosstrain/python/crosstrain/
#                                           the agent's package, where `crosstrain run` looks for it
#                                           (<exe dir>/../share/crosstrain/python: run::find_agent_dir)
#   PREFIX/lib/libcrosstrain_tensor_stats.so
#                                           the agent's compiled statistics (<exe dir>/../lib:
#                                           run::find_agent_native)
# The paths are fixed rather than GNUInstallDirs', because the front's lookup is fixed.
install(TARGETS crosstrain RUNTIME DESTINATION bin)
if(TARGET crosstrain-engine)
  # libtorch is not copied: the installed engine keeps the path of the torch wheel it was built
  # against (the build's .venv, or -DCROSSTRAIN_PYTHON's environment), as the build's engine does.
  # Named here because CMake leaves directories inside the project (.venv) out of the link path.
  set_target_properties(crosstrain-engine PROPERTIES INSTALL_RPATH "${TORCH_INSTALL_PREFIX}/lib"
    INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS crosstrain-engine RUNTIME DESTINATION bin)
endif()
install(TARGETS crosstrain_tensor_stats LIBRARY DESTINATION lib)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/crosstrain DESTINATION share/crosstrain/python
  PATTERN __pycache__ EXCLUDE)
