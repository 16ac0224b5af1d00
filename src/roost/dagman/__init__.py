"""DAGMan: workflows of dependent jobs (issue 14). ``language`` reads DAG files; the node
state machine and the manager process come next."""
