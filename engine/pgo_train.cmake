# The profile step of the PGO build (CMakeLists.txt, STCSIM_PGO), run with cmake -P: clears the instrumented
# twin's old counts, runs the training launches with it, and copies the counts (.gcda) to where the module's
# own objects look for them (the same paths under its object directory). Variables: TRAIN_OBJECTS,
# ENGINE_OBJECTS, PYTHON, SOURCE_DIR, MODULE, STAMP.
file(GLOB_RECURSE old_counts "${TRAIN_OBJECTS}/*.gcda")
if(old_counts)
  file(REMOVE ${old_counts})
endif()
# The training imports stcsim from SOURCE_DIR: an editable install of another checkout (its import hook sits
# before the path search) would otherwise win, so such hooks are dropped first.
set(launch "import runpy, sys; sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith(('_editable', '__editable'))]; sys.path.insert(0, '.'); runpy.run_module('stcsim.tools.pgo_train', run_name='__main__')")
execute_process(
  COMMAND "${PYTHON}" -c "${launch}" --module "${MODULE}"
  WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the PGO training run failed (exit ${rc}); build with -DSTCSIM_PGO=OFF to skip it")
endif()
file(GLOB_RECURSE counts RELATIVE "${TRAIN_OBJECTS}" "${TRAIN_OBJECTS}/*.gcda")
if(NOT counts)
  message(FATAL_ERROR "the PGO training run wrote no counts under ${TRAIN_OBJECTS}")
endif()
foreach(f ${counts})
  get_filename_component(dir "${ENGINE_OBJECTS}/${f}" DIRECTORY)
  file(COPY "${TRAIN_OBJECTS}/${f}" DESTINATION "${dir}")
endforeach()
file(TOUCH "${STAMP}")
