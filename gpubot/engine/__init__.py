"""Use cases over the domain and the ports: intake, planning, execution, the service facade."""
