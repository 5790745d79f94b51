"""The client side: synthetic consumers as Kafka's Java consumer behaves, classic and consumer protocol, reaching
the coordinator only through requests and answers; the closed forms of their quiet periods (periodic elision,
the coordinator lookup loop).
"""
