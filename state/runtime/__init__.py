"""The runtime around one group's coordinators (Kafka's CoordinatorRuntime and shard): clock, timers, the network
between clients and brokers, carrying out the managers' results (appending records, writing rows, routing
answers), the stored form of the state and its live snapshot.
"""
