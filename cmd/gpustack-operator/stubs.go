package main

func runWorker(args []string) error        { return nil }
func runDeviceManager(args []string) error { return nil }
