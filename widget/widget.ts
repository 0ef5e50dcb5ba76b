(window as any).ParleyWidget = {};
